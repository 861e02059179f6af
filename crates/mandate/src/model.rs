//! The mandate and its transitions. Pure: the service loads a mandate, applies one of these and
//! stores the result with a compare-and-swap on `version`.

use std::time::Duration;

use idconsent_approval::Recipient;
use idconsent_kernel::id::{ApplicationId, MandateId};
use idconsent_kernel::{Currency, Environment, Money, Timestamp};

/// How long a recipient has to authorise (or re-authorise) a mandate (CONTRACT §7).
pub const AUTHORIZATION_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|value| value.as_str() == text)
            }

            /// `a, b or c`, for validation messages.
            pub fn choices() -> String {
                let names: Vec<&str> = Self::ALL.iter().map(|value| value.as_str()).collect();
                match names.split_last() {
                    Some((last, [])) => (*last).to_owned(),
                    Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                    None => String::new(),
                }
            }
        }
    };
}

wire_enum!(
    /// What the recipient authorises (`type` on the wire).
    MandateType {
        DirectDebit = "direct_debit",
        StandingOrder = "standing_order",
        Authorization = "authorization",
    }
);

wire_enum!(
    Frequency {
        Daily = "daily",
        Weekly = "weekly",
        Monthly = "monthly",
        Yearly = "yearly",
    }
);

wire_enum!(
    MandateStatus {
        PendingAuthorization = "pending_authorization",
        Active = "active",
        Cancelled = "cancelled",
        Expired = "expired",
    }
);

/// What the recipient authorises besides the description: a maximum amount (or none), the
/// currency, and how often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    pub amount: Option<Money>,
    pub currency: Currency,
    pub frequency: Option<Frequency>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Mandate {
    pub id: MandateId,
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub recipient: Recipient,
    pub kind: MandateType,
    pub terms: Terms,
    pub description: String,
    /// Where `mandate.signed` goes; the application's callback URL when none was given.
    pub callback_url: Option<String>,
    /// As stored; see [`Mandate::status_at`] for what it reads as.
    pub status: MandateStatus,
    /// While a change of terms awaits re-authorisation: the terms the recipient authorised
    /// before (the context shows old → new).
    pub authorized_terms: Option<Terms>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When a pending authorisation lapses (`None` unless pending).
    pub authorization_deadline: Option<Timestamp>,
    pub authorized_at: Option<Timestamp>,
    pub cancelled_at: Option<Timestamp>,
    /// Bumped by every stored change; the store's compare-and-swap key.
    pub version: i64,
}

/// What a merchant's PUT asks to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    pub description: Option<String>,
    /// `Some(None)` removes the maximum amount.
    pub amount: Option<Option<Money>>,
    pub currency: Option<Currency>,
    /// `Some(None)` removes the frequency.
    pub frequency: Option<Option<Frequency>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("The mandate is {}", .0.as_str())]
    NotPending(MandateStatus),
    #[error("The mandate is {} and can no longer change", .0.as_str())]
    Closed(MandateStatus),
}

impl Mandate {
    /// The status as of `now`: a pending mandate past its deadline is `expired` even before the
    /// sweeper has stored that.
    pub fn status_at(&self, now: Timestamp) -> MandateStatus {
        match (self.status, self.authorization_deadline) {
            (MandateStatus::PendingAuthorization, Some(deadline)) if deadline <= now => {
                MandateStatus::Expired
            }
            (status, _) => status,
        }
    }

    fn pending_at(&self, now: Timestamp) -> Result<(), TransitionError> {
        match self.status_at(now) {
            MandateStatus::PendingAuthorization => Ok(()),
            other => Err(TransitionError::NotPending(other)),
        }
    }

    fn bump(&mut self, now: Timestamp) {
        self.updated_at = now;
        self.version += 1;
    }

    /// The recipient authorised the current terms.
    pub fn approve(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.pending_at(now)?;
        self.status = MandateStatus::Active;
        self.authorized_terms = None;
        self.authorization_deadline = None;
        self.authorized_at = Some(now);
        self.bump(now);
        Ok(())
    }

    /// The recipient declined (also a re-authorisation): the mandate is cancelled.
    pub fn decline(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        self.pending_at(now)?;
        self.close_as_cancelled(now);
        Ok(())
    }

    /// The merchant cancels. `Ok(false)` when it already was (DELETE is idempotent).
    pub fn cancel(&mut self, now: Timestamp) -> Result<bool, TransitionError> {
        match self.status_at(now) {
            MandateStatus::Cancelled => Ok(false),
            MandateStatus::Expired => Err(TransitionError::Closed(MandateStatus::Expired)),
            MandateStatus::PendingAuthorization | MandateStatus::Active => {
                self.close_as_cancelled(now);
                Ok(true)
            }
        }
    }

    fn close_as_cancelled(&mut self, now: Timestamp) {
        self.status = MandateStatus::Cancelled;
        self.authorization_deadline = None;
        self.cancelled_at = Some(now);
        self.bump(now);
    }

    /// The merchant changes the mandate. The description may change in any open state; new
    /// terms on an active mandate send it back for re-authorisation (with a fresh deadline),
    /// and on a pending one replace what is awaiting authorisation. `Ok(false)` when nothing
    /// differs from what is stored.
    pub fn change(&mut self, changes: &Changes, now: Timestamp) -> Result<bool, TransitionError> {
        let status = self.status_at(now);
        if matches!(status, MandateStatus::Cancelled | MandateStatus::Expired) {
            return Err(TransitionError::Closed(status));
        }
        let mut terms = self.terms;
        if let Some(currency) = changes.currency {
            terms.currency = currency;
        }
        if let Some(amount) = changes.amount {
            terms.amount = amount;
        }
        if let Some(frequency) = changes.frequency {
            terms.frequency = frequency;
        }
        let description = changes
            .description
            .clone()
            .unwrap_or_else(|| self.description.clone());
        if terms == self.terms && description == self.description {
            return Ok(false);
        }
        if terms != self.terms && status == MandateStatus::Active {
            self.status = MandateStatus::PendingAuthorization;
            self.authorized_terms = Some(self.terms);
            self.authorization_deadline = Some(now.plus(AUTHORIZATION_WINDOW));
        }
        // Back to exactly what was authorised: nothing is awaiting re-authorisation any more.
        if self.status == MandateStatus::PendingAuthorization
            && self.authorized_terms == Some(terms)
        {
            self.status = MandateStatus::Active;
            self.authorized_terms = None;
            self.authorization_deadline = None;
        }
        self.terms = terms;
        self.description = description;
        self.bump(now);
        Ok(true)
    }

    /// The sweeper: a pending mandate whose deadline has passed.
    pub fn expire(&mut self, now: Timestamp) -> Result<(), TransitionError> {
        if self.status != MandateStatus::PendingAuthorization
            || self.status_at(now) != MandateStatus::Expired
        {
            return Err(TransitionError::NotPending(self.status_at(now)));
        }
        self.status = MandateStatus::Expired;
        self.authorization_deadline = None;
        self.bump(now);
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use idconsent_kernel::PhoneNumber;
    use idconsent_kernel::id::TypedId;

    use super::*;

    pub fn at(secs: u64) -> Timestamp {
        Timestamp::from_millis(1_000 * secs as i64)
    }

    pub fn usd(minor: i64) -> Money {
        Money::from_minor(minor, Currency::parse("USD").unwrap()).unwrap()
    }

    pub fn pending() -> Mandate {
        Mandate {
            id: MandateId::from_trusted("md_1".into()),
            application_id: ApplicationId::from_trusted("app_1".into()),
            environment: Environment::Sandbox,
            recipient: Recipient::Phone(PhoneNumber::parse("+15551234567").unwrap()),
            kind: MandateType::DirectDebit,
            terms: Terms {
                amount: Some(usd(5_000)),
                currency: Currency::parse("USD").unwrap(),
                frequency: Some(Frequency::Monthly),
            },
            description: "Gym membership".into(),
            callback_url: None,
            status: MandateStatus::PendingAuthorization,
            authorized_terms: None,
            created_at: at(0),
            updated_at: at(0),
            authorization_deadline: Some(at(0).plus(AUTHORIZATION_WINDOW)),
            authorized_at: None,
            cancelled_at: None,
            version: 0,
        }
    }

    #[test]
    fn approval_activates_once_and_only_before_the_deadline() {
        let mut mandate = pending();
        mandate.approve(at(10)).unwrap();
        assert_eq!(mandate.status, MandateStatus::Active);
        assert_eq!(mandate.authorized_at, Some(at(10)));
        assert_eq!(mandate.version, 1);
        assert_eq!(
            mandate.approve(at(11)),
            Err(TransitionError::NotPending(MandateStatus::Active))
        );

        let mut late = pending();
        let deadline = late.authorization_deadline.unwrap();
        assert_eq!(late.status_at(deadline), MandateStatus::Expired);
        assert!(late.approve(deadline).is_err());
        late.expire(deadline).unwrap();
        assert_eq!(late.status, MandateStatus::Expired);
        assert!(late.expire(deadline).is_err(), "expired once");
    }

    #[test]
    fn new_terms_on_an_active_mandate_need_re_authorisation_showing_the_old_ones() {
        let mut mandate = pending();
        mandate.approve(at(10)).unwrap();
        let description_only = Changes {
            description: Some("Gym, family plan".into()),
            ..Changes::default()
        };
        assert!(mandate.change(&description_only, at(20)).unwrap());
        assert_eq!(mandate.status, MandateStatus::Active);

        let old = mandate.terms;
        let raise = Changes {
            amount: Some(Some(usd(9_000))),
            ..Changes::default()
        };
        assert!(mandate.change(&raise, at(30)).unwrap());
        assert_eq!(mandate.status, MandateStatus::PendingAuthorization);
        assert_eq!(mandate.authorized_terms, Some(old));
        assert_eq!(
            mandate.authorization_deadline,
            Some(at(30).plus(AUTHORIZATION_WINDOW))
        );
        assert!(!mandate.change(&raise, at(31)).unwrap(), "nothing differs");

        // Changing back to the authorised terms needs no new authorisation.
        let back = Changes {
            amount: Some(Some(usd(5_000))),
            ..Changes::default()
        };
        assert!(mandate.change(&back, at(40)).unwrap());
        assert_eq!(mandate.status, MandateStatus::Active);
        assert_eq!(mandate.authorized_terms, None);

        mandate.change(&raise, at(50)).unwrap();
        mandate.approve(at(60)).unwrap();
        assert_eq!(mandate.terms.amount, Some(usd(9_000)));
        assert_eq!(mandate.authorized_terms, None);
    }

    #[test]
    fn closed_mandates_do_not_change_and_cancelling_twice_is_quiet() {
        let mut mandate = pending();
        assert!(mandate.cancel(at(5)).unwrap());
        assert!(!mandate.cancel(at(6)).unwrap());
        assert_eq!(mandate.cancelled_at, Some(at(5)));
        let changes = Changes {
            description: Some("x".into()),
            ..Changes::default()
        };
        assert_eq!(
            mandate.change(&changes, at(7)),
            Err(TransitionError::Closed(MandateStatus::Cancelled))
        );
        assert!(mandate.decline(at(7)).is_err());

        let mut expired = pending();
        let after = expired
            .authorization_deadline
            .unwrap()
            .plus(Duration::from_secs(1));
        assert_eq!(
            expired.change(&changes, after),
            Err(TransitionError::Closed(MandateStatus::Expired))
        );
        assert_eq!(
            expired.cancel(after),
            Err(TransitionError::Closed(MandateStatus::Expired))
        );
    }

    #[test]
    fn declining_a_re_authorisation_cancels() {
        let mut mandate = pending();
        mandate.approve(at(1)).unwrap();
        mandate
            .change(
                &Changes {
                    frequency: Some(Some(Frequency::Weekly)),
                    ..Changes::default()
                },
                at(2),
            )
            .unwrap();
        mandate.decline(at(3)).unwrap();
        assert_eq!(mandate.status, MandateStatus::Cancelled);
        assert_eq!(mandate.authorization_deadline, None);
    }

    #[test]
    fn wire_names_round_trip() {
        for status in MandateStatus::ALL {
            assert_eq!(MandateStatus::parse(status.as_str()), Some(*status));
        }
        assert_eq!(
            MandateType::choices(),
            "direct_debit, standing_order or authorization"
        );
        assert_eq!(Frequency::parse("hourly"), None);
    }
}
