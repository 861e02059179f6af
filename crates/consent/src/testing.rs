//! An in-memory [`SessionRepository`] for service tests; it passes the same contract suite as
//! the diesel adapter. One lock around everything makes each operation atomic, as the contract
//! asks; outbox entries go to an [`InMemoryDeliveries`], usage charges to a ledger here.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::id::SessionId;
use idconsent_kernel::{QrError, QrFormat, QrOptions, QrRenderer, Timestamp, UsageLedger};
use idconsent_webhook::testing::InMemoryDeliveries;
use idconsent_webhook::{Effects, Outbox};

use crate::model::{Session, SessionStatus};
use crate::ports::{CreateError, FloodLimits, SessionRepository, StoreError};

#[derive(Debug, Default)]
struct State {
    sessions: BTreeMap<SessionId, Session>,
    usage: UsageLedger,
}

#[derive(Debug)]
pub struct InMemorySessions {
    state: Mutex<State>,
    deliveries: Arc<InMemoryDeliveries>,
}

impl InMemorySessions {
    /// Sessions whose events land in `deliveries`.
    pub fn new(deliveries: Arc<InMemoryDeliveries>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            deliveries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_outbox(&self, outbox: &[Outbox]) {
        self.deliveries.enqueue_now(outbox);
    }
}

#[async_trait]
impl SessionRepository for InMemorySessions {
    async fn create(
        &self,
        session: &Session,
        effects: &Effects,
        limits: &FloodLimits,
        now: Timestamp,
    ) -> Result<(), CreateError> {
        let mut state = self.lock();
        let of_recipient =
            |s: &&Session| s.recipient == session.recipient && s.environment == session.environment;
        let pending: Vec<Timestamp> = state
            .sessions
            .values()
            .filter(of_recipient)
            .filter(|s| s.application_id == session.application_id)
            .filter(|s| s.status == SessionStatus::Pending && s.expires_at > now)
            .map(|s| s.expires_at)
            .collect();
        if let Some(refused) = limits.pending_refusal(&pending, now) {
            return Err(CreateError::Refused(refused));
        }
        let window_start = limits.window_start(now);
        let recent: Vec<Timestamp> = state
            .sessions
            .values()
            .filter(of_recipient)
            .filter(|s| s.created_at > window_start)
            .map(|s| s.created_at)
            .collect();
        if let Some(refused) = limits.window_refusal(&recent, now) {
            return Err(CreateError::Refused(refused));
        }
        if state.sessions.contains_key(&session.id) {
            return Err(CreateError::Store(StoreError::Unavailable(
                "duplicate session id".into(),
            )));
        }
        state
            .usage
            .charge(&effects.charges)
            .map_err(CreateError::Quota)?;
        state.sessions.insert(session.id.clone(), session.clone());
        self.write_outbox(&effects.outbox);
        Ok(())
    }

    async fn find(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        Ok(self.lock().sessions.get(id).cloned())
    }

    async fn decide(
        &self,
        id: &SessionId,
        status: SessionStatus,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        let session = state.sessions.get(id).ok_or(StoreError::NotFound)?;
        if session.status != SessionStatus::Pending || at >= session.expires_at {
            return Err(StoreError::NotPending);
        }
        state
            .usage
            .charge(&effects.charges)
            .map_err(StoreError::Quota)?;
        if let Some(session) = state.sessions.get_mut(id) {
            session.status = status;
            session.decided_at = Some(at);
        }
        self.write_outbox(&effects.outbox);
        Ok(())
    }

    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Session>, StoreError> {
        let mut due: Vec<Session> = self
            .lock()
            .sessions
            .values()
            .filter(|s| s.status == SessionStatus::Pending && s.expires_at <= now)
            .cloned()
            .collect();
        due.sort_by(|a, b| (a.expires_at, &a.id).cmp(&(b.expires_at, &b.id)));
        due.truncate(limit as usize);
        Ok(due)
    }

    async fn expire(
        &self,
        id: &SessionId,
        at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.sessions.get_mut(id) {
            Some(session) if session.status == SessionStatus::Pending => {
                session.status = SessionStatus::Expired;
                session.decided_at = Some(at);
                self.write_outbox(outbox);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemorySessions;
    use crate::contract::Stores;

    async fn stores() -> Option<(Stores, ())> {
        let deliveries = Arc::new(InMemoryDeliveries::default());
        Some((
            Stores {
                sessions: Arc::new(InMemorySessions::new(deliveries.clone())),
                deliveries,
            },
            (),
        ))
    }

    crate::session_repository_contract!(stores);
}

/// Service tests on the fakes: the rules of `ConsentService` without a database or HTTP.
/// A [`QrRenderer`] for tests: the "image" is `<format>:<size>:<data>` in text, so a test reads
/// what a real code would encode. Refuses sizes out of range, as the real one does.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextQr;

impl QrRenderer for TextQr {
    fn render(
        &self,
        data: &str,
        format: QrFormat,
        options: &QrOptions,
    ) -> Result<Vec<u8>, QrError> {
        if !(QrOptions::MIN_SIZE..=QrOptions::MAX_SIZE).contains(&options.size) {
            return Err(QrError::Size);
        }
        Ok(format!("{}:{}:{data}", format.as_str(), options.size).into_bytes())
    }
}

#[cfg(test)]
mod service_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use async_trait::async_trait;
    use idconsent_kernel::id::{ApplicationId, ClientId, TypedId};
    use idconsent_kernel::{
        Environment, Intent, ManualClock, OsRandom, PhoneNumber, QrFormat, QrOptions, Timestamp,
        UlidGenerator, Unmetered,
    };
    use idconsent_webhook::DeliveryStore;
    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::{InMemorySessions, TextQr};
    use crate::error::ConsentError;
    use crate::model::{Decision, SessionStatus};
    use crate::ports::{RecipientDirectory, StoreError};
    use crate::service::{
        ConsentPorts, ConsentService, ConsentSettings, CreateRequest, Requester, TransactionInput,
    };

    /// Enrolled: every phone ending in an even digit.
    #[derive(Debug)]
    struct EvenPhonesEnrolled;

    #[async_trait]
    impl RecipientDirectory for EvenPhonesEnrolled {
        async fn is_enrolled(&self, phone: &PhoneNumber) -> Result<bool, StoreError> {
            let last = phone.as_str().bytes().last().unwrap_or(b'1');
            Ok((last - b'0').is_multiple_of(2))
        }
    }

    struct Fixture {
        service: ConsentService,
        deliveries: Arc<InMemoryDeliveries>,
        clock: Arc<ManualClock>,
    }

    fn fixture() -> Fixture {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let deliveries = Arc::new(InMemoryDeliveries::default());
        let service = ConsentService::new(
            ConsentPorts {
                sessions: Arc::new(InMemorySessions::new(deliveries.clone())),
                recipients: Arc::new(EvenPhonesEnrolled),
                metering: Arc::new(Unmetered),
                clock: clock.clone(),
                ids: Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom))),
                outbox_written: None,
                qr: Arc::new(TextQr),
            },
            ConsentSettings {
                allow_private_callbacks: false,
                ..ConsentSettings::default()
            },
        );
        Fixture {
            service,
            deliveries,
            clock,
        }
    }

    fn requester(environment: Environment) -> Requester {
        Requester {
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            client_id: ClientId::parse("cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            environment,
            allowed_intents: vec![Intent::Login, Intent::Transaction],
        }
    }

    fn login(recipient: &str) -> CreateRequest {
        CreateRequest {
            client_id: "cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C".into(),
            recipient: recipient.into(),
            intent: "LOGIN".into(),
            callback_url: "https://shop.example/hooks".into(),
            transaction: TransactionInput {
                kind: "login".into(),
                description: "Sign in".into(),
                amount: "0".into(),
                currency: "USD".into(),
                payee: "Shop".into(),
            },
        }
    }

    /// The event types written, in name order (events of one instant have no order).
    fn events(deliveries: &InMemoryDeliveries) -> Vec<String> {
        let mut types: Vec<String> = deliveries
            .all()
            .iter()
            .map(|d| d.event_type.to_string())
            .collect();
        types.sort_unstable();
        types
    }

    #[tokio::test]
    async fn a_session_is_created_decided_once_and_reported() {
        let Fixture {
            service,
            deliveries,
            ..
        } = fixture();
        let sandbox = requester(Environment::Sandbox);
        let created = service
            .create(&sandbox, login("+15550000001"))
            .await
            .unwrap()
            .session;
        assert_eq!(created.status, SessionStatus::Pending);
        assert_eq!(events(&deliveries), ["consent.created"]);
        let id = created.id.as_str();
        let approved = service
            .decide_in_sandbox(&sandbox, id, Decision::Approve)
            .await
            .unwrap();
        assert_eq!(approved.status, SessionStatus::Approved);
        let again = service
            .decide_in_sandbox(&sandbox, id, Decision::Reject)
            .await;
        assert!(matches!(again, Err(ConsentError::Conflict(_))), "{again:?}");
        assert_eq!(events(&deliveries), ["consent.approved", "consent.created"]);
        // The sandbox helper is refused to live keys.
        let live = service
            .decide_in_sandbox(&requester(Environment::Live), id, Decision::Approve)
            .await;
        assert!(matches!(live, Err(ConsentError::Forbidden(_))), "{live:?}");
    }

    #[tokio::test]
    async fn live_sessions_need_an_enrolled_recipient() {
        let Fixture { service, .. } = fixture();
        let live = requester(Environment::Live);
        let unknown = service.create(&live, login("+15550000001")).await;
        assert!(
            matches!(unknown, Err(ConsentError::NotFound(_))),
            "{unknown:?}"
        );
        service.create(&live, login("+15550000002")).await.unwrap();
    }

    #[tokio::test]
    async fn a_recipient_gets_five_pending_sessions_then_a_retry_time() {
        let Fixture { service, .. } = fixture();
        let sandbox = requester(Environment::Sandbox);
        for _ in 0..5 {
            service
                .create(&sandbox, login("+15550000003"))
                .await
                .unwrap();
        }
        let refused = service.create(&sandbox, login("+15550000003")).await;
        assert!(
            matches!(refused, Err(ConsentError::RateLimited { .. })),
            "{refused:?}"
        );
        // Another recipient is not affected.
        service
            .create(&sandbox, login("+15550000005"))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn pending_sessions_expire_on_time_with_their_event() {
        let Fixture {
            service,
            deliveries,
            clock,
        } = fixture();
        let sandbox = requester(Environment::Sandbox);
        let created = service
            .create(&sandbox, login("+15550000007"))
            .await
            .unwrap()
            .session;
        assert_eq!(service.expire_due().await.unwrap(), 0);
        clock.advance(Duration::from_secs(300));
        assert_eq!(service.expire_due().await.unwrap(), 1);
        assert_eq!(service.expire_due().await.unwrap(), 0, "once");
        let read = service.get(&sandbox, created.id.as_str()).await.unwrap();
        assert_eq!(read.status, SessionStatus::Expired);
        assert_eq!(events(&deliveries), ["consent.created", "consent.expired"]);
        let late = service
            .decide_in_sandbox(&sandbox, created.id.as_str(), Decision::Approve)
            .await;
        assert!(late.is_err());
        // Deliveries are listed per application and environment, as the merchant sees them.
        let listed = deliveries
            .list(
                &sandbox.application_id,
                Environment::Sandbox,
                None,
                idconsent_kernel::PageRequest::default(),
            )
            .await
            .unwrap();
        assert_eq!(listed.total, 2);
    }

    #[tokio::test]
    async fn a_session_comes_with_its_qr_code_served_while_pending() {
        let Fixture { service, .. } = fixture();
        let sandbox = requester(Environment::Sandbox);
        let created = service
            .create(&sandbox, login("+15550000009"))
            .await
            .unwrap();
        let id = created.session.id.as_str();
        let payload = format!("idconsent://auth/{id}");
        assert_eq!(created.qr_png, format!("png:256:{payload}").into_bytes());
        let svg = QrOptions {
            size: 512,
            ..QrOptions::default()
        };
        let image = service.pending_qr(id, QrFormat::Svg, &svg).await.unwrap();
        assert_eq!(image, format!("svg:512:{payload}").into_bytes());
        // A size the image cannot have is the caller's mistake, named.
        let huge = QrOptions {
            size: 4096,
            ..QrOptions::default()
        };
        let refused = service.pending_qr(id, QrFormat::Png, &huge).await;
        assert!(
            matches!(&refused, Err(ConsentError::Invalid(errors)) if errors.to_string().contains("size")),
            "{refused:?}"
        );
        // Another session's id, or none: not found.
        let unknown = service
            .pending_qr("cs_01JDKX0000000000000000000Z", QrFormat::Png, &svg)
            .await;
        assert!(
            matches!(unknown, Err(ConsentError::NotFound(_))),
            "{unknown:?}"
        );
        // Once decided the code is gone.
        service
            .decide_in_sandbox(&sandbox, id, Decision::Approve)
            .await
            .unwrap();
        let gone = service.pending_qr(id, QrFormat::Png, &svg).await;
        assert!(matches!(gone, Err(ConsentError::Gone(_))), "{gone:?}");
    }
}
