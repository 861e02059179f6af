//! An in-memory [`MandateRepository`] for service tests; it passes the same contract suite as
//! the diesel adapter. One lock around everything makes each operation atomic, as the contract
//! asks; outbox entries go to an [`InMemoryDeliveries`], usage charges to a ledger here.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::id::MandateId;
use idconsent_kernel::{Page, PageRequest, Timestamp, UsageLedger};
use idconsent_webhook::Effects;
use idconsent_webhook::testing::InMemoryDeliveries;

use crate::model::{Mandate, MandateStatus};
use crate::ports::{MandateQuery, MandateRepository, StoreError};

#[derive(Debug, Default)]
struct State {
    mandates: BTreeMap<MandateId, Mandate>,
    usage: UsageLedger,
}

#[derive(Debug)]
pub struct InMemoryMandates {
    state: Mutex<State>,
    deliveries: Arc<InMemoryDeliveries>,
}

impl InMemoryMandates {
    /// Mandates whose events land in `deliveries`.
    pub fn new(deliveries: Arc<InMemoryDeliveries>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            deliveries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Charges and outbox of a write, all or nothing.
    fn apply(&self, state: &mut State, effects: &Effects) -> Result<(), StoreError> {
        state
            .usage
            .charge(&effects.charges)
            .map_err(StoreError::Quota)?;
        self.deliveries.enqueue_now(&effects.outbox);
        Ok(())
    }
}

#[async_trait]
impl MandateRepository for InMemoryMandates {
    async fn create(&self, mandate: &Mandate, effects: &Effects) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.mandates.contains_key(&mandate.id) {
            return Err(StoreError::Duplicate);
        }
        self.apply(&mut state, effects)?;
        state.mandates.insert(mandate.id.clone(), mandate.clone());
        Ok(())
    }

    async fn find(&self, id: &MandateId) -> Result<Option<Mandate>, StoreError> {
        Ok(self.lock().mandates.get(id).cloned())
    }

    async fn replace(
        &self,
        mandate: &Mandate,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.mandates.get(&mandate.id) {
            Some(stored) if stored.version == expected_version => {}
            _ => return Ok(false),
        }
        self.apply(&mut state, effects)?;
        state.mandates.insert(mandate.id.clone(), mandate.clone());
        Ok(true)
    }

    async fn list(
        &self,
        query: &MandateQuery,
        page: PageRequest,
    ) -> Result<Page<Mandate>, StoreError> {
        let state = self.lock();
        let mut matching: Vec<&Mandate> = state
            .mandates
            .values()
            .filter(|m| m.application_id == query.application_id)
            .filter(|m| m.environment == query.environment)
            .filter(|m| query.status.is_none_or(|s| m.status_at(query.now) == s))
            .filter(|m| query.kind.is_none_or(|k| m.kind == k))
            .collect();
        matching.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(Page {
            total: matching.len() as u64,
            items: matching
                .into_iter()
                .skip(page.offset() as usize)
                .take(page.limit() as usize)
                .cloned()
                .collect(),
            request: page,
        })
    }

    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Mandate>, StoreError> {
        let mut due: Vec<Mandate> = self
            .lock()
            .mandates
            .values()
            .filter(|m| m.status == MandateStatus::PendingAuthorization)
            .filter(|m| m.authorization_deadline.is_some_and(|at| at <= now))
            .cloned()
            .collect();
        due.sort_by(|a, b| {
            (a.authorization_deadline, &a.id).cmp(&(b.authorization_deadline, &b.id))
        });
        due.truncate(limit as usize);
        Ok(due)
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemoryMandates;
    use crate::contract::Stores;

    async fn stores() -> Option<(Stores, ())> {
        let deliveries = Arc::new(InMemoryDeliveries::default());
        Some((
            Stores {
                mandates: Arc::new(InMemoryMandates::new(deliveries.clone())),
                deliveries,
            },
            (),
        ))
    }

    crate::mandate_repository_contract!(stores);
}

/// Service tests on the fakes: the rules of `MandateService` without a database or HTTP.
#[cfg(test)]
mod service_tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;
    use std::time::Duration;

    use async_trait::async_trait;
    use idconsent_approval::Decision;
    use idconsent_kernel::id::{ApplicationId, TypedId};
    use idconsent_kernel::{
        Environment, ManualClock, OsRandom, PhoneNumber, Timestamp, UlidGenerator, Unmetered,
    };
    use idconsent_notification::Notifier;
    use idconsent_notification::testing::{InMemoryMessageStore, dev_invitations};
    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemoryMandates;
    use crate::error::MandateError;
    use crate::model::{AUTHORIZATION_WINDOW, MandateStatus};
    use crate::ports::{RecipientDirectory, StoreError};
    use crate::service::{
        ChangeMandate, CreateMandate, MandatePorts, MandateService, MandateSettings, Requester,
    };

    /// Only +15550000001 is enrolled.
    #[derive(Debug)]
    struct OneEnrolled;

    #[async_trait]
    impl RecipientDirectory for OneEnrolled {
        async fn is_enrolled(&self, phone: &PhoneNumber) -> Result<bool, StoreError> {
            Ok(phone.as_str() == "+15550000001")
        }
    }

    struct World {
        service: MandateService,
        clock: Arc<ManualClock>,
        deliveries: Arc<InMemoryDeliveries>,
    }

    fn world() -> World {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let deliveries = Arc::new(InMemoryDeliveries::default());
        let ids = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
        let service = MandateService::new(
            MandatePorts {
                mandates: Arc::new(InMemoryMandates::new(deliveries.clone())),
                recipients: Arc::new(OneEnrolled),
                metering: Arc::new(Unmetered),
                clock: clock.clone(),
                ids: ids.clone(),
                outbox_written: None,
                notifications: Arc::new(Notifier::new(
                    Arc::new(InMemoryMessageStore::default()),
                    clock.clone(),
                    ids,
                    None,
                )),
                invitations: Arc::new(dev_invitations(clock.clone())),
            },
            MandateSettings::default(),
        );
        World {
            service,
            clock,
            deliveries,
        }
    }

    fn requester(environment: Environment) -> Requester {
        Requester {
            application_id: ApplicationId::from_trusted("app_1".into()),
            environment,
            default_callback_url: Some("https://shop.example/hooks".into()),
        }
    }

    fn input(recipient: &str) -> CreateMandate {
        CreateMandate {
            recipient: recipient.into(),
            kind: "direct_debit".into(),
            amount: Some("49.90".into()),
            currency: None,
            frequency: Some("monthly".into()),
            description: "Gym membership".into(),
            callback_url: None,
        }
    }

    fn signed_events(world: &World) -> usize {
        world
            .deliveries
            .all()
            .iter()
            .filter(|d| d.event_type == crate::events::MANDATE_SIGNED)
            .count()
    }

    #[tokio::test]
    async fn live_phones_must_be_enrolled_emails_and_sandbox_need_not() {
        let world = world();
        let live = requester(Environment::Live);
        assert!(matches!(
            world.service.create(&live, input("+15559999999")).await,
            Err(MandateError::NotFound("Recipient is not enrolled"))
        ));
        let enrolled = world.service.create(&live, input("+15550000001")).await;
        assert_eq!(
            enrolled.unwrap().status,
            MandateStatus::PendingAuthorization
        );
        let email = world
            .service
            .create(&live, input("ann@example.com"))
            .await
            .unwrap();
        assert!(
            world
                .service
                .page_url(&email)
                .unwrap()
                .ends_with(email.id.as_str())
        );
        let sandbox = requester(Environment::Sandbox);
        assert!(
            world
                .service
                .create(&sandbox, input("+15559999999"))
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn another_application_or_environment_sees_nothing() {
        let world = world();
        let mine = requester(Environment::Sandbox);
        let mandate = world
            .service
            .create(&mine, input("+15550000001"))
            .await
            .unwrap();
        let mut theirs = mine.clone();
        theirs.application_id = ApplicationId::from_trusted("app_2".into());
        let live = requester(Environment::Live);
        for other in [&theirs, &live] {
            let id = mandate.id.as_str();
            assert!(matches!(
                world.service.get(other, id).await,
                Err(MandateError::NotFound(_))
            ));
            assert!(world.service.cancel(other, id).await.is_err());
            assert!(
                world
                    .service
                    .decide_in_sandbox(other, id, Decision::Approve)
                    .await
                    .is_err()
            );
        }
        assert_eq!(
            world.service.get(&mine, mandate.id.as_str()).await.unwrap(),
            mandate
        );
    }

    #[tokio::test]
    async fn sandbox_approval_signs_once_and_a_change_of_terms_asks_again() {
        let world = world();
        let sandbox = requester(Environment::Sandbox);
        let mandate = world
            .service
            .create(&sandbox, input("+15550000001"))
            .await
            .unwrap();
        let id = mandate.id.as_str();
        let active = world
            .service
            .decide_in_sandbox(&sandbox, id, Decision::Approve)
            .await
            .unwrap();
        assert_eq!(active.status, MandateStatus::Active);
        assert!(matches!(
            world
                .service
                .decide_in_sandbox(&sandbox, id, Decision::Approve)
                .await,
            Err(MandateError::Conflict(_))
        ));
        assert_eq!(signed_events(&world), 1);

        let raised = world
            .service
            .change(
                &sandbox,
                id,
                ChangeMandate {
                    amount: Some(Some("99".into())),
                    ..ChangeMandate::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(raised.status, MandateStatus::PendingAuthorization);
        assert_eq!(raised.authorized_terms, Some(mandate.terms));
        // Back to the authorised terms: active again, but nobody signed anything.
        let back = world
            .service
            .change(
                &sandbox,
                id,
                ChangeMandate {
                    amount: Some(Some("49.90".into())),
                    ..ChangeMandate::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(back.status, MandateStatus::Active);
        assert_eq!(signed_events(&world), 1);
        world
            .service
            .change(
                &sandbox,
                id,
                ChangeMandate {
                    amount: Some(Some("99".into())),
                    ..ChangeMandate::default()
                },
            )
            .await
            .unwrap();
        world
            .service
            .decide_in_sandbox(&sandbox, id, Decision::Approve)
            .await
            .unwrap();
        assert_eq!(signed_events(&world), 2, "a re-authorisation signs again");

        let cancelled = world.service.cancel(&sandbox, id).await.unwrap();
        assert_eq!(cancelled.status, MandateStatus::Cancelled);
        let again = world.service.cancel(&sandbox, id).await.unwrap();
        assert_eq!(again, cancelled, "DELETE is idempotent");
        assert!(matches!(
            world
                .service
                .change(
                    &sandbox,
                    id,
                    ChangeMandate {
                        description: Some("x".into()),
                        ..ChangeMandate::default()
                    }
                )
                .await,
            Err(MandateError::Conflict(_))
        ));
        assert!(matches!(
            world
                .service
                .decide_in_sandbox(&requester(Environment::Live), id, Decision::Approve)
                .await,
            Err(MandateError::Forbidden(_))
        ));
    }

    #[tokio::test]
    async fn unauthorised_mandates_expire_on_time_once() {
        let world = world();
        let sandbox = requester(Environment::Sandbox);
        let mandate = world
            .service
            .create(&sandbox, input("+15550000001"))
            .await
            .unwrap();
        world
            .clock
            .advance(AUTHORIZATION_WINDOW - Duration::from_millis(1));
        assert_eq!(world.service.expire_due().await.unwrap(), 0);
        world.clock.advance(Duration::from_millis(1));
        let read = world
            .service
            .get(&sandbox, mandate.id.as_str())
            .await
            .unwrap();
        assert_eq!(read.status_at(world.service.now()), MandateStatus::Expired);
        assert_eq!(world.service.expire_due().await.unwrap(), 1);
        assert_eq!(world.service.expire_due().await.unwrap(), 0);
        assert!(
            world
                .service
                .decide_in_sandbox(&sandbox, mandate.id.as_str(), Decision::Approve)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn concurrent_sandbox_decisions_decide_once() {
        let world = Arc::new(world());
        let sandbox = requester(Environment::Sandbox);
        let mandate = world
            .service
            .create(&sandbox, input("+15550000001"))
            .await
            .unwrap();
        let attempts = (0..10).map(|n| {
            let world = world.clone();
            let sandbox = sandbox.clone();
            let id = mandate.id.to_string();
            tokio::spawn(async move {
                let decision = if n % 2 == 0 {
                    Decision::Approve
                } else {
                    Decision::Reject
                };
                world
                    .service
                    .decide_in_sandbox(&sandbox, &id, decision)
                    .await
                    .is_ok()
            })
        });
        let mut won = 0;
        for attempt in attempts {
            won += usize::from(attempt.await.unwrap());
        }
        assert_eq!(won, 1);
    }
}
