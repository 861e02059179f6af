use crate::events::{CONSENT_APPROVED, CONSENT_CREATED, CONSENT_EXPIRED, CONSENT_REJECTED};
use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::id::{ApplicationId, ClientId, SessionId, TypedId};
use idconsent_kernel::{
    Clock, Currency, DisplayText, Environment, IdGenerator, Intent, Metering, Metric, Money, Nudge,
    PhoneNumber, QrRenderer, QuotaExceeded, Timestamp, ValidationErrors, WebUrl,
};
use idconsent_webhook::{Effects, EventType, Outbox};
use serde::Serialize;

use crate::error::ConsentError;
use crate::events::{ConsentEventData, NothingAdded, SessionData};
use crate::model::{Decision, Session, SessionStatus, Transaction};
use crate::ports::{
    CreateError, CreateRefused, FloodLimits, RecipientDirectory, SessionRepository, StoreError,
};

mod qr;

pub use qr::NewSession;

/// Lifetimes, limits and policies.
#[derive(Debug, Clone)]
pub struct ConsentSettings {
    /// How long a session waits for a decision (`IDC_CONSENT_TTL_SECONDS`).
    pub ttl: Duration,
    /// The mobile app's URI scheme (`IDC_APP_SCHEME`): QR codes carry `<scheme>://auth/<id>`.
    pub app_scheme: String,
    pub flood: FloodLimits,
    /// Whether callback URLs may target private or loopback hosts.
    pub allow_private_callbacks: bool,
}

impl Default for ConsentSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            app_scheme: "idconsent".into(),
            flood: FloodLimits::default(),
            allow_private_callbacks: false,
        }
    }
}

/// The application asking, as its signed request established it.
#[derive(Debug, Clone)]
pub struct Requester {
    pub application_id: ApplicationId,
    pub client_id: ClientId,
    pub environment: Environment,
    pub allowed_intents: Vec<Intent>,
}

/// A create request as received (spec §2.1).
#[derive(Debug, Clone, Default)]
pub struct CreateRequest {
    pub client_id: String,
    pub recipient: String,
    pub intent: String,
    pub callback_url: String,
    pub transaction: TransactionInput,
}

#[derive(Debug, Clone, Default)]
pub struct TransactionInput {
    pub kind: String,
    pub description: String,
    /// The JSON number's decimal text, so it is read exactly.
    pub amount: String,
    pub currency: String,
    pub payee: String,
}

/// What the consent service uses from outside.
#[derive(Debug, Clone)]
pub struct ConsentPorts {
    pub sessions: Arc<dyn SessionRepository>,
    pub recipients: Arc<dyn RecipientDirectory>,
    pub metering: Arc<dyn Metering>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    /// Wakes the webhook worker after an outbox write.
    pub outbox_written: Option<Arc<dyn Nudge>>,
    /// Draws the sessions' QR codes.
    pub qr: Arc<dyn QrRenderer>,
}

#[derive(Debug, Clone)]
pub struct ConsentService {
    sessions: Arc<dyn SessionRepository>,
    recipients: Arc<dyn RecipientDirectory>,
    metering: Arc<dyn Metering>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    outbox_written: Option<Arc<dyn Nudge>>,
    qr: Arc<dyn QrRenderer>,
    settings: ConsentSettings,
}

impl ConsentService {
    pub fn new(ports: ConsentPorts, settings: ConsentSettings) -> Self {
        let ConsentPorts {
            sessions,
            recipients,
            metering,
            clock,
            ids,
            outbox_written,
            qr,
        } = ports;
        Self {
            sessions,
            recipients,
            metering,
            clock,
            ids,
            outbox_written,
            qr,
            settings,
        }
    }

    pub fn settings(&self) -> &ConsentSettings {
        &self.settings
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Creates a pending session and its `consent.created` event; answers with the session's
    /// QR code (PNG, the default size) for the creator to show.
    pub async fn create(
        &self,
        requester: &Requester,
        request: CreateRequest,
    ) -> Result<NewSession, ConsentError> {
        let session = self
            .create_with_id(requester, request, self.ids.next())
            .await?;
        let qr_png = self.qr_png(&session.id)?;
        Ok(NewSession { session, qr_png })
    }

    /// [`ConsentService::create`] with an id chosen by the caller (an OAuth request stores its
    /// details under the session id before the session exists).
    pub async fn create_with_id(
        &self,
        requester: &Requester,
        request: CreateRequest,
        id: SessionId,
    ) -> Result<Session, ConsentError> {
        let live = requester.environment == Environment::Live;
        let mut errors = ValidationErrors::new();
        let recipient = errors.check("recipient", PhoneNumber::parse(&request.recipient));
        let intent = Intent::parse(&request.intent);
        if intent.is_none() {
            errors.push("intent", "must be LOGIN, TRANSACTION, SIGNATURE or OAUTH");
        }
        let callback_url = errors.check(
            "callbackUrl",
            WebUrl::parse(&request.callback_url).and_then(|url| {
                url.check_target(live, self.settings.allow_private_callbacks)
                    .map(|()| url)
            }),
        );
        let transaction = check_transaction(&mut errors, &request.transaction);
        if request.client_id.trim().is_empty() {
            errors.push("clientId", "must not be empty");
        }
        let (recipient, intent, callback_url, transaction) =
            errors.finish_with(|| Some((recipient?, intent?, callback_url?, transaction?)))?;

        if request.client_id != requester.client_id.as_str() {
            return Err(ConsentError::Forbidden(
                "clientId does not belong to this API key",
            ));
        }
        if !requester.allowed_intents.contains(&intent) {
            return Err(ConsentError::Forbidden(
                "This application does not enable that request type",
            ));
        }
        if live && !self.recipients.is_enrolled(&recipient).await? {
            return Err(ConsentError::NotFound("Recipient is not enrolled"));
        }

        let now = self.now();
        let session = Session {
            id,
            application_id: requester.application_id.clone(),
            client_id: requester.client_id.clone(),
            environment: requester.environment,
            recipient,
            intent,
            transaction,
            callback_url: callback_url.to_string(),
            status: SessionStatus::Pending,
            created_at: now,
            expires_at: now.plus(self.settings.ttl),
            decided_at: None,
        };
        let charge = self
            .metering
            .charge(
                &session.application_id,
                session.environment,
                Metric::Consents,
                now,
            )
            .await
            .map_err(|error| ConsentError::Unavailable(Box::new(error)))?;
        let effects = Effects {
            outbox: vec![self.event(&session, CONSENT_CREATED, now, &NothingAdded {})],
            charges: charge.into_iter().collect(),
        };
        match self
            .sessions
            .create(&session, &effects, &self.settings.flood, now)
            .await
        {
            Ok(()) => {}
            Err(CreateError::Quota(quota)) => return Err(self.quota(quota)),
            Err(CreateError::Refused(refused)) => {
                let (message, retry_at) = match refused {
                    CreateRefused::TooManyPending { retry_at } => (
                        "Too many pending sessions for this recipient; wait for one to be decided or expire",
                        retry_at,
                    ),
                    CreateRefused::TooManyInWindow { retry_at } => (
                        "Too many sessions for this recipient in the last hour",
                        retry_at,
                    ),
                };
                return Err(ConsentError::RateLimited {
                    message,
                    retry_after_secs: retry_at.since(now).as_secs().max(1),
                });
            }
            Err(CreateError::Store(error)) => return Err(error.into()),
        }
        self.nudge();
        Ok(session)
    }

    /// A session as its creator sees it; any other application or environment gets "not found".
    pub async fn get(&self, requester: &Requester, id: &str) -> Result<Session, ConsentError> {
        let session = self.load(id).await?;
        if session.application_id != requester.application_id
            || session.environment != requester.environment
        {
            return Err(ConsentError::NotFound("Session not found"));
        }
        Ok(session)
    }

    /// A session as its recipient's app sees it: anyone else's is "not found".
    pub async fn get_for_recipient(
        &self,
        recipient: &PhoneNumber,
        id: &str,
    ) -> Result<Session, ConsentError> {
        let session = self.load(id).await?;
        if &session.recipient != recipient {
            return Err(ConsentError::NotFound("Session not found"));
        }
        Ok(session)
    }

    /// A session by id, for the recipient's app and the QR image.
    pub async fn load(&self, id: &str) -> Result<Session, ConsentError> {
        let id = SessionId::parse(id).map_err(|_| ConsentError::NotFound("Session not found"))?;
        self.sessions
            .find(&id)
            .await?
            .ok_or(ConsentError::NotFound("Session not found"))
    }

    /// The sandbox helpers: decide as the user would, with a `mk_test_` key only.
    pub async fn decide_in_sandbox(
        &self,
        requester: &Requester,
        id: &str,
        decision: Decision,
    ) -> Result<Session, ConsentError> {
        let session = self.sandbox_session(requester, id).await?;
        self.decide(session, decision, Effects::default()).await
    }

    /// A session the sandbox helpers may decide: the requester's own, with a `mk_test_` key.
    pub async fn sandbox_session(
        &self,
        requester: &Requester,
        id: &str,
    ) -> Result<Session, ConsentError> {
        if requester.environment != Environment::Sandbox {
            return Err(ConsentError::Forbidden(
                "Sandbox helpers work only with mk_test_ keys",
            ));
        }
        self.get(requester, id).await
    }

    /// Applies the user's decision, with its event and `also` (effects of the caller, e.g.
    /// `auth.success` and the authentication it costs), all in one transaction. 409 when the
    /// session is no longer pending.
    pub async fn decide(
        &self,
        session: Session,
        decision: Decision,
        also: Effects,
    ) -> Result<Session, ConsentError> {
        self.decide_adding(session, decision, &NothingAdded {}, also)
            .await
    }

    /// [`ConsentService::decide`] with fields the session's intent adds to the event's data
    /// after the session's own (an OAuth request's redirect, code and claims).
    pub async fn decide_adding<X: Serialize + Sync>(
        &self,
        session: Session,
        decision: Decision,
        added: &X,
        also: Effects,
    ) -> Result<Session, ConsentError> {
        let now = self.now();
        match session.status_at(now) {
            SessionStatus::Pending => {}
            SessionStatus::Expired => {
                return Err(ConsentError::Conflict("The session has expired".into()));
            }
            other => {
                return Err(ConsentError::Conflict(format!(
                    "The session is already {}",
                    other.as_str()
                )));
            }
        }
        let decided = Session {
            status: decision.status(),
            decided_at: Some(now),
            ..session
        };
        let event_type = match decision {
            Decision::Approve => CONSENT_APPROVED,
            Decision::Reject => CONSENT_REJECTED,
        };
        let mut effects = Effects::events(vec![self.event(&decided, event_type, now, added)]);
        effects.extend(also);
        match self
            .sessions
            .decide(&decided.id, decided.status, now, &effects)
            .await
        {
            Ok(()) => {}
            Err(StoreError::Quota(quota)) => return Err(self.quota(quota)),
            Err(other) => return Err(other.into()),
        }
        self.nudge();
        Ok(decided)
    }

    fn quota(&self, quota: QuotaExceeded) -> ConsentError {
        ConsentError::QuotaExceeded {
            quota,
            retry_after_secs: quota.retry_after_secs(self.now()),
        }
    }

    /// Records the expiry of every session whose time is up, each with its `consent.expired`
    /// event. Returns how many this call expired.
    pub async fn expire_due(&self) -> Result<usize, ConsentError> {
        let now = self.now();
        let due = self.sessions.due_for_expiry(now, 200).await?;
        let mut expired = 0;
        for session in due {
            let at = session.expires_at;
            let outbox = self.event(
                &Session {
                    status: SessionStatus::Expired,
                    decided_at: Some(at),
                    ..session.clone()
                },
                CONSENT_EXPIRED,
                now,
                &NothingAdded {},
            );
            if self.sessions.expire(&session.id, at, &[outbox]).await? {
                expired += 1;
            }
        }
        if expired > 0 {
            self.nudge();
        }
        Ok(expired)
    }

    fn event<X: Serialize>(
        &self,
        session: &Session,
        event_type: EventType,
        now: Timestamp,
        added: &X,
    ) -> Outbox {
        let data = ConsentEventData {
            session: SessionData::of(session, now),
            added,
        };
        Outbox::new(
            self.ids.as_ref(),
            event_type,
            session.application_id.clone(),
            session.environment,
            now,
            &data,
            &[&session.callback_url],
        )
    }

    fn nudge(&self) {
        if let Some(nudge) = &self.outbox_written {
            nudge.nudge();
        }
    }
}

fn check_transaction(
    errors: &mut ValidationErrors,
    input: &TransactionInput,
) -> Option<Transaction> {
    // What the wallet shows: no control, text-direction or invisible characters.
    let mut text = |field: &str, value: &str, max: usize| {
        errors
            .check(
                format!("transaction.{field}"),
                DisplayText::parse(value, max),
            )
            .map(DisplayText::into_string)
    };
    let kind = text("type", &input.kind, 100);
    let description = text("description", &input.description, 500);
    let payee = text("payee", &input.payee, 200);
    let currency = errors.check("transaction.currency", Currency::parse(&input.currency));
    let amount = currency.and_then(|currency| {
        errors.check(
            "transaction.amount",
            Money::from_major_decimal(&input.amount, currency),
        )
    });
    Some(Transaction {
        kind: kind?,
        description: description?,
        amount: amount?,
        payee: payee?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> TransactionInput {
        TransactionInput {
            kind: "payment".into(),
            description: "Order 42".into(),
            amount: "19.99".into(),
            currency: "USD".into(),
            payee: "Example Shop".into(),
        }
    }

    #[test]
    fn transactions_are_checked_field_by_field() {
        let mut errors = ValidationErrors::new();
        assert!(check_transaction(&mut errors, &input()).is_some());
        assert!(errors.is_empty());

        let mut errors = ValidationErrors::new();
        let bad = TransactionInput {
            kind: " ".into(),
            amount: "-1".into(),
            currency: "usd".into(),
            ..input()
        };
        assert!(check_transaction(&mut errors, &bad).is_none());
        let fields: Vec<&str> = errors.fields().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["transaction.type", "transaction.currency"]);

        let mut errors = ValidationErrors::new();
        let precise = TransactionInput {
            amount: "1.234".into(),
            ..input()
        };
        assert!(check_transaction(&mut errors, &precise).is_none());
        assert_eq!(
            errors.fields()[0].message,
            "must have at most 2 decimal places"
        );
        let mut errors = ValidationErrors::new();
        let negative = TransactionInput {
            amount: "-0.01".into(),
            ..input()
        };
        assert!(check_transaction(&mut errors, &negative).is_none());
        assert_eq!(errors.fields()[0].message, "must be >= 0");
    }
}
