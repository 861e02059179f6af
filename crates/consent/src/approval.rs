//! Consent sessions as objects a recipient approves in the app (purpose `consent`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use idconsent_approval::{
    AlsoFn, ApplicationDirectory, ApplicationNames, ApprovalTarget, Approver, Audience, Line,
    PurposeKind, Recipient, Shown, Target, TargetError, Words, amount,
};
use idconsent_kernel::Intent;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::SessionId;
use idconsent_webhook::Effects;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ConsentError;
use crate::model::{Decision, Session, SessionStatus};
use crate::service::{ConsentService, Requester};

/// What sessions of one intent add to the plain consent: an OAuth request shows the claims it
/// would share and issues an authorization code when approved.
///
/// Contract: `describe` returns the fields the app shows besides the session's own;
/// `decide` decides the session in place of [`ConsentService::decide`], with the same
/// guarantees (one transaction with `also`, 409 when no longer pending).
#[async_trait]
pub trait IntentExtension: Send + Sync + fmt::Debug {
    fn intent(&self) -> Intent;
    async fn describe(&self, session: &Session) -> Result<Map<String, Value>, ConsentError>;
    async fn decide(
        &self,
        session: Session,
        decision: Decision,
        by: DecidedBy,
        also: Effects,
    ) -> Result<Session, ConsentError>;
}

/// Who decided a session. An extension that shares personal data must not share a real
/// person's data when the merchant decided in the user's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// The recipient, with a passkey in the app.
    Recipient,
    /// The merchant itself, through a sandbox helper (`mk_test_` keys only).
    SandboxHelper,
}

/// The [`ApprovalTarget`] of consent sessions.
#[derive(Debug, Clone)]
pub struct ConsentApprovals {
    consents: Arc<ConsentService>,
    directory: Arc<dyn ApplicationDirectory>,
    extensions: Vec<Arc<dyn IntentExtension>>,
}

impl ConsentApprovals {
    /// The purpose kind this domain serves (`purpose.type`: `consent`).
    pub const KIND: PurposeKind = PurposeKind::declared("consent");

    pub fn new(consents: Arc<ConsentService>, directory: Arc<dyn ApplicationDirectory>) -> Self {
        Self {
            consents,
            directory,
            extensions: Vec::new(),
        }
    }

    /// Sessions of `extension.intent()` are described and decided through it.
    pub fn with_extension(mut self, extension: Arc<dyn IntentExtension>) -> Self {
        self.extensions.push(extension);
        self
    }

    fn extension(&self, intent: Intent) -> Option<&Arc<dyn IntentExtension>> {
        self.extensions.iter().find(|e| e.intent() == intent)
    }

    /// The sandbox helpers: the merchant decides its own sandbox session as its user would,
    /// with the same events (no `auth.*`: no passkey was used).
    pub async fn decide_in_sandbox(
        &self,
        requester: &Requester,
        id: &str,
        decision: Decision,
    ) -> Result<Session, ConsentError> {
        let session = self.consents.sandbox_session(requester, id).await?;
        match self.extension(session.intent) {
            Some(extension) => {
                extension
                    .decide(
                        session,
                        decision,
                        DecidedBy::SandboxHelper,
                        Effects::default(),
                    )
                    .await
            }
            None => {
                self.consents
                    .decide(session, decision, Effects::default())
                    .await
            }
        }
    }

    async fn session(&self, id: &str) -> Result<Session, TargetError> {
        self.consents.load(id).await.map_err(target_error)
    }
}

/// What the app shows for a consent, and what its FIDO challenge commits to (the SHA-256 of
/// this object's canonical JSON, ADR 0006): `{type: "consent", sessionId, merchant,
/// application, environment, intent, transaction, expiresAt}`, then the fields the session's
/// intent adds (an OAuth request's claims, scopes and description).
///
/// Built here and nowhere else, from the session itself rather than from any API body or event:
/// a changed field or form changes the hash and every wallet would refuse to sign. The tests
/// below pin its canonical bytes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConsentContext<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    session_id: &'a SessionId,
    merchant: &'a str,
    application: &'a str,
    /// `sandbox` or `live`.
    environment: &'static str,
    intent: &'static str,
    transaction: ShownTransaction<'a>,
    expires_at: Timestamp,
    #[serde(flatten)]
    added: Map<String, Value>,
}

/// The transaction as the user approves it: the amount in major units as a JSON number
/// (`19.99`, `0.0`), the currency's ISO code.
#[derive(Debug, Serialize)]
struct ShownTransaction<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    description: &'a str,
    amount: f64,
    currency: String,
    payee: &'a str,
}

impl<'a> ConsentContext<'a> {
    fn of(session: &'a Session, names: &'a ApplicationNames, added: Map<String, Value>) -> Self {
        let transaction = &session.transaction;
        Self {
            kind: "consent",
            session_id: &session.id,
            merchant: &names.merchant,
            application: &names.application,
            environment: session.environment.as_str(),
            intent: session.intent.as_str(),
            transaction: ShownTransaction {
                kind: &transaction.kind,
                description: &transaction.description,
                amount: transaction.amount.major_f64(),
                currency: transaction.amount.currency().code().to_owned(),
                payee: &transaction.payee,
            },
            expires_at: session.expires_at,
            added,
        }
    }
}

/// What the user reads in the app: who asks, what for, and how much (from minor units).
fn shown(session: &Session, names: &ApplicationNames) -> Shown {
    let transaction = &session.transaction;
    let mut lines = vec![
        Line::labelled("intent", "Intent", session.intent.as_str()),
        Line::labelled("type", "Type", transaction.kind.clone()),
        Line::labelled("amount", "Amount", amount(&transaction.amount)),
        Line::labelled("payee", "Payee", transaction.payee.clone()),
        Line::plain("description", transaction.description.clone()),
    ];
    lines.retain(|line| !line.value.is_empty());
    let notes = match session.environment {
        idconsent_kernel::Environment::Sandbox => vec!["Sandbox: a test consent.".to_owned()],
        idconsent_kernel::Environment::Live => vec![],
    };
    Shown {
        title: format!("{} asks for your consent", names.merchant),
        requester: Some(format!("{} · {}", names.application, names.merchant)),
        lines,
        notes,
        words: Words::approve_or_decline("request"),
    }
}

/// A session's events go to its callback URL, for its application and environment.
pub fn audience_of(session: &Session) -> Audience {
    Audience {
        application_id: session.application_id.clone(),
        environment: session.environment,
        callback_url: session.callback_url.clone(),
    }
}

fn target_error(error: ConsentError) -> TargetError {
    match error {
        ConsentError::NotFound(_) => TargetError::NotFound,
        ConsentError::Conflict(message) => TargetError::NotPending(message),
        ConsentError::QuotaExceeded { quota, .. } => TargetError::Quota(quota),
        other => TargetError::Unavailable(Box::new(other)),
    }
}

#[async_trait]
impl ApprovalTarget for ConsentApprovals {
    fn kind(&self) -> PurposeKind {
        Self::KIND
    }

    async fn describe(&self, id: &str) -> Result<Target, TargetError> {
        let session = self.session(id).await?;
        let now = self.consents.now();
        let status = session.status_at(now);
        if status != SessionStatus::Pending {
            return Err(TargetError::NotPending(format!(
                "The session is already {}",
                status.as_str()
            )));
        }
        let names = self
            .directory
            .names(&session.application_id)
            .await
            .map_err(|error| TargetError::Unavailable(Box::new(error)))?
            .ok_or(TargetError::NotFound)?;
        let added = match self.extension(session.intent) {
            Some(extension) => extension.describe(&session).await.map_err(target_error)?,
            None => Map::new(),
        };
        let context = serde_json::to_value(ConsentContext::of(&session, &names, added))
            .map_err(|error| TargetError::Unavailable(Box::new(error)))?;
        Ok(Target {
            canonical_id: session.id.to_string(),
            recipient: Recipient::Phone(session.recipient.clone()),
            context,
            page: None,
            audience: Some(audience_of(&session)),
            shown: shown(&session, &names),
            passkey_required: true,
        })
    }

    async fn audience(&self, id: &str) -> Result<Option<Audience>, TargetError> {
        Ok(Some(audience_of(&self.session(id).await?)))
    }

    async fn decide(
        &self,
        id: &str,
        decision: idconsent_approval::Decision,
        _by: &Approver,
        also: &AlsoFn<'_>,
    ) -> Result<String, TargetError> {
        let session = self.session(id).await?;
        let also = also(&audience_of(&session));
        let decision = match decision {
            idconsent_approval::Decision::Approve => Decision::Approve,
            idconsent_approval::Decision::Reject => Decision::Reject,
        };
        let decided = match self.extension(session.intent) {
            Some(extension) => {
                extension
                    .decide(session, decision, DecidedBy::Recipient, also)
                    .await
            }
            None => self.consents.decide(session, decision, also).await,
        }
        .map_err(target_error)?;
        Ok(decided.status.as_str().to_owned())
    }
}

#[cfg(test)]
mod tests {
    //! The context a consent's challenge commits to, pinned byte for byte: the wallet recomputes
    //! SHA-256 of its canonical JSON, so any change here breaks every app in the field.

    use std::sync::Arc;

    use idconsent_approval::commitment::{canonical_json, context_hash};
    use idconsent_approval::{ApplicationNames, DirectoryError};
    use idconsent_kernel::id::{ApplicationId, ClientId, Entropy, SessionId, TypedId};
    use idconsent_kernel::{
        Currency, Environment, IdGenerator, ManualClock, Money, PhoneNumber, Timestamp, Unmetered,
    };
    use idconsent_webhook::Outbox;
    use serde_json::json;

    use super::*;
    use crate::model::Transaction;
    use crate::ports::{
        CreateError, FloodLimits, RecipientDirectory, SessionRepository, StoreError,
    };
    use crate::service::{ConsentPorts, ConsentSettings};
    use crate::testing::TextQr;

    #[derive(Debug)]
    struct Stored(Session);

    #[async_trait]
    impl SessionRepository for Stored {
        async fn create(
            &self,
            _: &Session,
            _: &Effects,
            _: &FloodLimits,
            _: Timestamp,
        ) -> Result<(), CreateError> {
            unreachable!("describe only reads")
        }
        async fn find(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
            Ok((id == &self.0.id).then(|| self.0.clone()))
        }
        async fn decide(
            &self,
            _: &SessionId,
            _: SessionStatus,
            _: Timestamp,
            _: &Effects,
        ) -> Result<(), StoreError> {
            unreachable!("describe only reads")
        }
        async fn due_for_expiry(&self, _: Timestamp, _: u32) -> Result<Vec<Session>, StoreError> {
            unreachable!("describe only reads")
        }
        async fn expire(
            &self,
            _: &SessionId,
            _: Timestamp,
            _: &[Outbox],
        ) -> Result<bool, StoreError> {
            unreachable!("describe only reads")
        }
    }

    #[derive(Debug)]
    struct Anyone;

    #[async_trait]
    impl RecipientDirectory for Anyone {
        async fn is_enrolled(&self, _: &PhoneNumber) -> Result<bool, StoreError> {
            Ok(true)
        }
    }

    #[derive(Debug)]
    struct Shop;

    #[async_trait]
    impl ApplicationDirectory for Shop {
        async fn names(
            &self,
            _: &ApplicationId,
        ) -> Result<Option<ApplicationNames>, DirectoryError> {
            Ok(Some(ApplicationNames {
                merchant: "Example Shop".into(),
                application: "Checkout".into(),
            }))
        }
    }

    #[derive(Debug)]
    struct NoIds;

    impl IdGenerator for NoIds {
        fn body(&self, _: Entropy) -> String {
            unreachable!("describe mints nothing")
        }
    }

    /// What an OAuth request adds (the shape `idconsent-oauth` gives it).
    #[derive(Debug)]
    struct OAuthLike;

    #[async_trait]
    impl IntentExtension for OAuthLike {
        fn intent(&self) -> Intent {
            Intent::Oauth
        }
        async fn describe(&self, _: &Session) -> Result<Map<String, Value>, ConsentError> {
            let Value::Object(fields) = json!({
                "claims": ["phone_number", "given_name"],
                "scopes": ["openid", "profile"],
                "description": "Open an account",
            }) else {
                unreachable!()
            };
            Ok(fields)
        }
        async fn decide(
            &self,
            _: Session,
            _: Decision,
            _: DecidedBy,
            _: Effects,
        ) -> Result<Session, ConsentError> {
            unreachable!("describe only reads")
        }
    }

    fn session(intent: Intent, minor: i64, kind: &str, description: &str) -> Session {
        Session {
            id: SessionId::parse("cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN").unwrap(),
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            client_id: ClientId::parse("cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            environment: Environment::Sandbox,
            recipient: PhoneNumber::parse("+15551234567").unwrap(),
            intent,
            transaction: Transaction {
                kind: kind.into(),
                description: description.into(),
                amount: Money::from_minor(minor, Currency::parse("EUR").unwrap()).unwrap(),
                payee: "Example Shop".into(),
            },
            callback_url: "https://shop.example/hooks".into(),
            status: SessionStatus::Pending,
            created_at: Timestamp::from_millis(1_764_000_000_000),
            expires_at: Timestamp::from_millis(1_764_000_300_000),
            decided_at: None,
        }
    }

    async fn described(session: Session) -> (String, String) {
        let consents = ConsentService::new(
            ConsentPorts {
                sessions: Arc::new(Stored(session.clone())),
                recipients: Arc::new(Anyone),
                metering: Arc::new(Unmetered),
                clock: Arc::new(ManualClock::new(Timestamp::from_millis(1_764_000_001_000))),
                ids: Arc::new(NoIds),
                outbox_written: None,
                qr: Arc::new(TextQr),
            },
            ConsentSettings::default(),
        );
        let approvals = ConsentApprovals::new(Arc::new(consents), Arc::new(Shop))
            .with_extension(Arc::new(OAuthLike));
        let target = approvals.describe(session.id.as_str()).await.unwrap();
        assert_eq!(
            target.recipient,
            Recipient::Phone(session.recipient.clone())
        );
        let hash: String = context_hash(&target.context)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        (
            String::from_utf8(canonical_json(&target.context)).unwrap(),
            hash,
        )
    }

    #[tokio::test]
    async fn a_transaction_context_is_pinned() {
        let (canonical, hash) =
            described(session(Intent::Transaction, 1999, "payment", "Order 42")).await;
        assert_eq!(
            canonical,
            r#"{"application":"Checkout","environment":"sandbox","expiresAt":"2025-11-24T16:05:00.000Z","intent":"TRANSACTION","merchant":"Example Shop","sessionId":"cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN","transaction":{"amount":19.99,"currency":"EUR","description":"Order 42","payee":"Example Shop","type":"payment"},"type":"consent"}"#
        );
        assert_eq!(
            hash,
            "921d15da8fb96da7d918b9a8f1ef73690a89f447843aef95f7bc439e965c2707"
        );
    }

    #[tokio::test]
    async fn an_oauth_context_is_pinned() {
        let (canonical, hash) =
            described(session(Intent::Oauth, 0, "oauth", "Open an account")).await;
        assert_eq!(
            canonical,
            r#"{"application":"Checkout","claims":["phone_number","given_name"],"description":"Open an account","environment":"sandbox","expiresAt":"2025-11-24T16:05:00.000Z","intent":"OAUTH","merchant":"Example Shop","scopes":["openid","profile"],"sessionId":"cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN","transaction":{"amount":0.0,"currency":"EUR","description":"Open an account","payee":"Example Shop","type":"oauth"},"type":"consent"}"#
        );
        assert_eq!(
            hash,
            "bb28a32e7ed3e83979f4e98f3734c74858409f8a97291acdd20ae7d046d08836"
        );
    }
}
