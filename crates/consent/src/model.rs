use idconsent_kernel::id::{ApplicationId, ClientId, SessionId};
use idconsent_kernel::{Environment, Intent, Money, PhoneNumber, Timestamp};

/// Where a session is. `Pending` is the only state that changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionStatus {
    Pending,
    Approved,
    Rejected,
    Expired,
}

impl SessionStatus {
    pub const ALL: [SessionStatus; 4] = [
        SessionStatus::Pending,
        SessionStatus::Approved,
        SessionStatus::Rejected,
        SessionStatus::Expired,
    ];

    /// The consent API's lower-case form.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Pending => "pending",
            SessionStatus::Approved => "approved",
            SessionStatus::Rejected => "rejected",
            SessionStatus::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    pub fn is_final(self) -> bool {
        self != SessionStatus::Pending
    }
}

/// What the user decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
}

impl Decision {
    pub fn status(self) -> SessionStatus {
        match self {
            Decision::Approve => SessionStatus::Approved,
            Decision::Reject => SessionStatus::Rejected,
        }
    }
}

/// What the user is shown and approves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// The spec's `type`.
    pub kind: String,
    pub description: String,
    pub amount: Money,
    pub payee: String,
}

/// A consent session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub id: SessionId,
    pub application_id: ApplicationId,
    pub client_id: ClientId,
    pub environment: Environment,
    pub recipient: PhoneNumber,
    pub intent: Intent,
    pub transaction: Transaction,
    pub callback_url: String,
    pub status: SessionStatus,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub decided_at: Option<Timestamp>,
}

impl Session {
    /// The status as of `now`: a pending session past its expiry is expired, whether or not the
    /// sweeper has recorded it yet.
    pub fn status_at(&self, now: Timestamp) -> SessionStatus {
        if self.status == SessionStatus::Pending && now >= self.expires_at {
            SessionStatus::Expired
        } else {
            self.status
        }
    }

    /// When the session was decided, as of `now`: a pending session past its expiry reads as
    /// decided (expired) at its expiry, whether or not the sweeper has recorded it yet.
    pub fn decided_at_as_of(&self, now: Timestamp) -> Option<Timestamp> {
        match (self.status_at(now), self.decided_at) {
            (_, Some(at)) => Some(at),
            (SessionStatus::Expired, None) => Some(self.expires_at),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idconsent_kernel::Currency;
    use idconsent_kernel::id::TypedId;

    fn session() -> Session {
        Session {
            id: SessionId::parse("cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN").unwrap(),
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            client_id: ClientId::parse("cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            environment: Environment::Sandbox,
            recipient: PhoneNumber::parse("+15551234567").unwrap(),
            intent: Intent::Transaction,
            transaction: Transaction {
                kind: "payment".into(),
                description: "Order 42".into(),
                amount: Money::from_minor(1999, Currency::parse("USD").unwrap()).unwrap(),
                payee: "Example Shop".into(),
            },
            callback_url: "https://shop.example/hooks".into(),
            status: SessionStatus::Pending,
            created_at: Timestamp::from_millis(1_000),
            expires_at: Timestamp::from_millis(301_000),
            decided_at: None,
        }
    }

    #[test]
    fn a_pending_session_past_expiry_reads_as_expired() {
        let session = session();
        assert_eq!(
            session.status_at(Timestamp::from_millis(300_999)),
            SessionStatus::Pending
        );
        assert_eq!(
            session.decided_at_as_of(Timestamp::from_millis(300_999)),
            None
        );
        assert_eq!(
            session.status_at(Timestamp::from_millis(301_000)),
            SessionStatus::Expired
        );
        assert_eq!(
            session.decided_at_as_of(Timestamp::from_millis(400_000)),
            Some(Timestamp::from_millis(301_000))
        );
        let decided = Session {
            status: SessionStatus::Approved,
            decided_at: Some(Timestamp::from_millis(2_000)),
            ..session
        };
        assert_eq!(
            decided.status_at(Timestamp::from_millis(999_999)),
            SessionStatus::Approved
        );
        assert_eq!(
            decided.decided_at_as_of(Timestamp::from_millis(999_999)),
            Some(Timestamp::from_millis(2_000))
        );
    }
}
