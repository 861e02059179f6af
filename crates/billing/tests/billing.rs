//! The billing service and the rate-limit gate on the in-memory store (which passes the same
//! contract suite as the diesel adapter, below).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use idconsent_access::{Caller, Gate, GateRequest, RefusalKind};
use idconsent_billing::contract::{Seed, Stores};
use idconsent_billing::testing::InMemoryBilling;
use idconsent_billing::{
    BillingError, BillingService, BillingStore, CustomLimits, InvoiceStatus, PlanCache,
    PlanMetering, RateLimitGate,
};
use idconsent_kernel::id::{ApplicationId, MerchantId};
use idconsent_kernel::{
    Clock, Environment, IdGenerator, ManualClock, Metering, Metric, OsRandom, PageRequest,
    Timestamp, UlidGenerator, UsagePeriod,
};

#[derive(Debug)]
struct FakeSeed(Arc<InMemoryBilling>);

#[async_trait::async_trait]
impl Seed for FakeSeed {
    async fn merchant(&self, merchant: &MerchantId, application: &ApplicationId) {
        self.0.add_merchant(merchant, application);
    }
    async fn metered(&self, merchant: &MerchantId, metric: Metric, period: UsagePeriod, used: u64) {
        self.0.set_metered(merchant, metric, period, used);
    }
}

async fn fake() -> Option<(Stores, ())> {
    let store = Arc::new(InMemoryBilling::new());
    Some((
        Stores {
            billing: store.clone(),
            seed: Arc::new(FakeSeed(store)),
        },
        (),
    ))
}

mod contract_on_the_fake {
    use super::*;
    idconsent_billing::billing_store_contract!(fake);
}

struct World {
    store: Arc<InMemoryBilling>,
    clock: Arc<ManualClock>,
    plans: Arc<PlanCache>,
    billing: BillingService,
    gate: RateLimitGate,
    merchant: MerchantId,
    application: ApplicationId,
}

fn world(start: &str) -> World {
    let store = Arc::new(InMemoryBilling::new());
    let clock = Arc::new(ManualClock::new(Timestamp::parse_rfc3339(start).unwrap()));
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let merchant: MerchantId = ids.next();
    let application: ApplicationId = ids.next();
    store.add_merchant(&merchant, &application);
    let plans = Arc::new(PlanCache::new(store.clone(), clock.clone()));
    World {
        billing: BillingService::new(store.clone(), plans.clone(), clock.clone(), ids),
        gate: RateLimitGate::new(plans.clone(), store.clone(), clock.clone()),
        store,
        clock,
        plans,
        merchant,
        application,
    }
}

fn caller(world: &World, environment: Environment) -> Caller {
    idconsent_access::testing::caller(&world.merchant, &world.application, environment)
}

fn header<'a>(headers: &'a [(&'static str, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.as_str())
        .unwrap()
}

#[tokio::test]
async fn the_sixty_first_request_in_a_minute_on_free_is_refused_until_one_fits() {
    let world = world("2026-11-26T12:00:00.000Z");
    let caller = caller(&world, Environment::Sandbox);
    let request = || GateRequest {
        caller: &caller,
        method: "GET",
        route: "/v1/qr/{id}",
        at: world.clock.now(),
    };
    for n in 1..=60u64 {
        let admitted = world.gate.admit(&request()).await.unwrap();
        assert_eq!(header(&admitted.headers, "RateLimit-Limit"), "60");
        assert_eq!(
            header(&admitted.headers, "RateLimit-Remaining"),
            (60 - n).to_string()
        );
    }
    let refused = world.gate.admit(&request()).await.unwrap_err();
    assert_eq!(refused.kind, RefusalKind::RateLimited);
    assert_eq!(refused.retry_after_secs, Some(1));
    assert_eq!(refused.details[0].field, "requestsPerMinute");
    assert_eq!(header(&refused.headers, "RateLimit-Remaining"), "0");
    // A second later one request fits again, not a whole new minute.
    world.clock.advance(Duration::from_secs(1));
    world.gate.admit(&request()).await.unwrap();
    assert!(world.gate.admit(&request()).await.is_err());
    world.clock.advance(Duration::from_secs(30));
    for _ in 0..30 {
        world.gate.admit(&request()).await.unwrap();
    }
    assert!(world.gate.admit(&request()).await.is_err());
}

#[tokio::test]
async fn requests_in_flight_are_limited_and_released_on_drop() {
    let world = world("2026-11-26T12:00:00.000Z");
    let caller = caller(&world, Environment::Sandbox);
    let request = GateRequest {
        caller: &caller,
        method: "POST",
        route: "/v1/consents/auth",
        at: world.clock.now(),
    };
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(world.gate.admit(&request).await.unwrap());
    }
    let refused = world.gate.admit(&request).await.unwrap_err();
    assert_eq!(refused.details[0].field, "concurrent");
    assert_eq!(header(&refused.headers, "RateLimit-Limit"), "5");
    held.pop();
    held.push(world.gate.admit(&request).await.unwrap());
}

#[tokio::test]
async fn the_day_limit_applies_and_live_calls_are_reported() {
    let world = world("2026-11-26T23:00:00.000Z");
    world
        .billing
        .set_plan(
            world.merchant.as_str(),
            "enterprise",
            Some(&CustomLimits {
                per_minute: Some(1_000),
                per_day: Some(Some(30)),
                concurrent: None,
            }),
        )
        .await
        .unwrap();
    let live = caller(&world, Environment::Live);
    let sandbox = caller(&world, Environment::Sandbox);
    for n in 0..30 {
        let caller = if n % 2 == 0 { &live } else { &sandbox };
        let admitted = world
            .gate
            .admit(&GateRequest {
                caller,
                method: "GET",
                route: "/x",
                at: world.clock.now(),
            })
            .await
            .unwrap();
        if n == 29 {
            assert_eq!(header(&admitted.headers, "RateLimit-Limit"), "30");
            assert_eq!(header(&admitted.headers, "RateLimit-Remaining"), "0");
            assert_eq!(header(&admitted.headers, "RateLimit-Reset"), "3600");
        }
    }
    let request = GateRequest {
        caller: &live,
        method: "GET",
        route: "/x",
        at: world.clock.now(),
    };
    let refused = world.gate.admit(&request).await.unwrap_err();
    assert_eq!(refused.details[0].field, "requestsPerDay");
    assert_eq!(refused.retry_after_secs, Some(3600));
    // The calls went to the store with each lease; a flush finds nothing left to report.
    world.gate.flush().await.unwrap();
    let usage = world.billing.usage(&world.merchant).await.unwrap();
    assert_eq!(usage.api_calls, 15, "live calls only");
    // Tomorrow the day starts afresh.
    world.clock.advance(Duration::from_secs(3600));
    world.gate.admit(&request).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_counted_call_is_lost_when_a_flush_forgets_idle_merchants() {
    // Limits off: the gate only counts, so every flush finds the merchant "idle" and may forget
    // it while a request is being counted — that call must still reach the store.
    let world = world("2026-11-26T12:00:00.000Z");
    let gate = Arc::new(
        RateLimitGate::new(
            world.plans.clone(),
            world.store.clone(),
            world.clock.clone(),
        )
        .counting_only(),
    );
    let live = Arc::new(caller(&world, Environment::Live));
    let at = world.clock.now();
    let counters = (0..2).map(|_| {
        let (gate, live) = (gate.clone(), live.clone());
        tokio::spawn(async move {
            for _ in 0..20_000 {
                let request = GateRequest {
                    caller: &live,
                    method: "GET",
                    route: "/x",
                    at,
                };
                gate.admit(&request).await.unwrap();
                tokio::task::yield_now().await;
            }
        })
    });
    let counters: Vec<_> = counters.collect();
    while !counters.iter().all(tokio::task::JoinHandle::is_finished) {
        gate.flush().await.unwrap();
        tokio::task::yield_now().await;
    }
    gate.flush().await.unwrap();
    let usage = world.billing.usage(&world.merchant).await.unwrap();
    assert_eq!(usage.api_calls, 40_000);
}

#[tokio::test]
async fn metering_counts_live_actions_against_the_plan_quota_and_never_sandbox() {
    let world = world("2026-11-26T12:00:00.000Z");
    let metering = PlanMetering::new(world.plans.clone());
    let now = world.clock.now();
    assert_eq!(
        metering
            .charge(
                &world.application,
                Environment::Sandbox,
                Metric::Consents,
                now
            )
            .await
            .unwrap(),
        None
    );
    let charge = metering
        .charge(&world.application, Environment::Live, Metric::Mandates, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (charge.limit, charge.period),
        (Some(10), UsagePeriod::of(now))
    );
    world
        .billing
        .set_plan(world.merchant.as_str(), "enterprise", None)
        .await
        .unwrap();
    let unlimited = metering
        .charge(&world.application, Environment::Live, Metric::Mandates, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        unlimited.limit, None,
        "a plan set in this process applies at once"
    );
}

#[tokio::test]
async fn a_month_closes_once_with_its_usage_and_invoices_are_paid_or_lapse() {
    let world = world("2026-10-20T12:00:00.000Z");
    let october = UsagePeriod::of(world.clock.now());
    world
        .billing
        .set_plan(world.merchant.as_str(), "growth", None)
        .await
        .unwrap();
    world
        .store
        .set_metered(&world.merchant, Metric::Verifications, october, 10);
    // A month that has not ended cannot be closed.
    let open = world.billing.close_period("2026-10").await.unwrap_err();
    assert!(matches!(open, BillingError::Invalid(_)));
    assert!(matches!(
        world.billing.close_period("2026-13").await,
        Err(BillingError::Invalid(_))
    ));

    world
        .clock
        .set(Timestamp::parse_rfc3339("2026-11-01T00:10:00.000Z").unwrap());
    let closed = world.billing.run_schedule().await.unwrap();
    assert_eq!((closed.issued, closed.already_invoiced), (1, 0));
    let again = world.billing.close_period("2026-10").await.unwrap();
    assert_eq!((again.issued, again.already_invoiced), (0, 1));

    let page = PageRequest::new(None, None).unwrap();
    let invoices = world
        .billing
        .invoices(&world.merchant, Some("2026-10"), None, page)
        .await
        .unwrap();
    let invoice = &invoices.items[0];
    assert_eq!(invoice.amount_cents, 14_900 + 400);
    assert_eq!(invoice.status, InvoiceStatus::Pending);
    assert!(matches!(
        world
            .billing
            .invoices(&world.merchant, Some("10-2026"), Some("late"), page)
            .await,
        Err(BillingError::Invalid(errors)) if errors.fields().len() == 2
    ));

    // Fourteen days after issue it is overdue, on time, and stored so by the scheduler.
    world.clock.advance(Duration::from_secs(14 * 24 * 3600));
    let overdue = world
        .billing
        .invoices(&world.merchant, None, Some("overdue"), page)
        .await
        .unwrap();
    assert_eq!(overdue.total, 1);
    world.billing.run_schedule().await.unwrap();
    let stored = world.store.invoice(&invoice.id).await.unwrap().unwrap();
    assert_eq!(stored.status, InvoiceStatus::Overdue);
    let paid = world.billing.mark_paid(invoice.id.as_str()).await.unwrap();
    assert_eq!(paid.status, InvoiceStatus::Paid);
    assert_eq!(paid.paid_at, Some(world.clock.now()));
    assert!(matches!(
        world.billing.mark_paid("in_nope").await,
        Err(BillingError::NotFound(_))
    ));
}

#[tokio::test]
async fn an_unknown_plan_or_merchant_changes_nothing() {
    let world = world("2026-11-26T12:00:00.000Z");
    assert!(matches!(
        world
            .billing
            .set_plan(world.merchant.as_str(), "platinum", None)
            .await,
        Err(BillingError::Invalid(_))
    ));
    assert!(matches!(
        world.billing.set_plan("mer_nobody", "basic", None).await,
        Err(BillingError::NotFound(_))
    ));
    let terms = world.billing.plan(&world.merchant).await.unwrap();
    assert_eq!(terms.plan.as_str(), "free");
}
