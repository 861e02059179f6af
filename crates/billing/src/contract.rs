//! The [`BillingStore`] contract. Adapters run it through `billing_store_contract!(make)`,
//! `make` being an `async fn() -> Option<(Stores, G)>` giving a fresh store and a way to seed
//! the merchants and metered counters that other domains' stores write.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use idconsent_kernel::id::{ApplicationId, InvoiceId, MerchantId, TypedId};
use idconsent_kernel::{
    Clock, IdGenerator, Metric, OsRandom, PageRequest, SystemClock, Timestamp, UlidGenerator,
    UsagePeriod,
};

use crate::budget::{self, LeaseRequest};
use crate::invoice::{self, InvoiceStatus, PAYMENT_TERM};
use crate::plan::{Plan, PlanTerms, RateLimits};
use crate::ports::{BillingStore, CallReport, InvoiceQuery, StoreError, Usage};

/// Writes what other domains own, so the suite can read it through the billing port.
#[async_trait]
pub trait Seed: Send + Sync + std::fmt::Debug {
    /// A merchant on the free plan owning `application`.
    async fn merchant(&self, merchant: &MerchantId, application: &ApplicationId);
    /// A metered counter as a domain's store counted it.
    async fn metered(&self, merchant: &MerchantId, metric: Metric, period: UsagePeriod, used: u64);
}

#[derive(Debug, Clone)]
pub struct Stores {
    pub billing: Arc<dyn BillingStore>,
    pub seed: Arc<dyn Seed>,
}

#[macro_export]
macro_rules! billing_store_contract {
    ($make:path) => {
        $crate::billing_store_contract!(@cases $make;
            plans_start_free_and_are_replaced_whole,
            concurrent_leases_never_grant_more_than_the_budget,
            returned_requests_and_reported_calls_are_counted,
            usage_sums_a_period,
            one_invoice_per_merchant_and_period_even_when_racing,
            invoices_list_by_period_and_status_as_of_now,
            paying_and_lapsing_are_stored_once,
            merchants_page_by_id_and_creation,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((stores, _guard)) = $make().await else { return };
                $crate::contract::$case(stores).await;
            }
        )*
    };
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

async fn seeded_merchant(stores: &Stores) -> (MerchantId, ApplicationId) {
    let ids = ids();
    let merchant: MerchantId = ids.next();
    let application: ApplicationId = ids.next();
    stores.seed.merchant(&merchant, &application).await;
    (merchant, application)
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap()
}

pub async fn plans_start_free_and_are_replaced_whole(stores: Stores) {
    let billing = &stores.billing;
    let (merchant, application) = seeded_merchant(&stores).await;
    assert_eq!(
        billing.plan(&merchant).await.unwrap(),
        PlanTerms::standard(Plan::Free)
    );
    assert_eq!(billing.merchant_of(&application).await.unwrap(), merchant);
    let custom = PlanTerms {
        plan: Plan::Enterprise,
        limits: RateLimits {
            per_minute: 123_456,
            per_day: None,
            concurrent: 77,
        },
    };
    billing.set_plan(&merchant, &custom).await.unwrap();
    assert_eq!(billing.plan(&merchant).await.unwrap(), custom);
    let growth = PlanTerms::standard(Plan::Growth);
    billing.set_plan(&merchant, &growth).await.unwrap();
    assert_eq!(billing.plan(&merchant).await.unwrap(), growth);

    let unknown: MerchantId = ids().next();
    assert!(matches!(
        billing.plan(&unknown).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        billing.set_plan(&unknown, &growth).await,
        Err(StoreError::NotFound)
    ));
    let stranger: ApplicationId = ids().next();
    assert!(matches!(
        billing.merchant_of(&stranger).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn concurrent_leases_never_grant_more_than_the_budget(stores: Stores) {
    let (merchant, _) = seeded_merchant(&stores).await;
    let limits = Plan::Free.standard_limits();
    let now = SystemClock.now();
    let ask = LeaseRequest {
        now,
        limits,
        want: budget::slice(&limits),
        returning: 0,
        returning_day: 0,
    };
    // Twenty processes ask for a slice of 12 of a budget of 60 at the same instant.
    let grants = join_all((0..20).map(|_| {
        let billing = stores.billing.clone();
        let merchant = merchant.clone();
        async move {
            billing
                .lease(&merchant, &ask, CallReport::default())
                .await
                .unwrap()
                .granted
        }
    }))
    .await;
    assert_eq!(grants.iter().sum::<u64>(), 60, "{grants:?}");
    assert_eq!(grants.iter().filter(|granted| **granted == 12).count(), 5);
    let refused = stores
        .billing
        .lease(&merchant, &ask, CallReport::default())
        .await
        .unwrap();
    assert_eq!(refused.granted, 0);
    assert_eq!(
        refused.refused.map(|(window, _)| window),
        Some(budget::Window::Minute)
    );
}

pub async fn returned_requests_and_reported_calls_are_counted(stores: Stores) {
    let (merchant, _) = seeded_merchant(&stores).await;
    let limits = Plan::Free.standard_limits();
    let now = SystemClock.now();
    let today = budget::day_of(now);
    let all = LeaseRequest {
        now,
        limits,
        want: 60,
        returning: 0,
        returning_day: 0,
    };
    let first = stores
        .billing
        .lease(&merchant, &all, CallReport::default())
        .await
        .unwrap();
    assert_eq!(first.granted, 60);
    // 45 of the 60 were used (and are reported); 15 come back and can be leased again.
    let again = LeaseRequest {
        returning: 15,
        returning_day: today,
        want: 20,
        ..all
    };
    let second = stores
        .billing
        .lease(
            &merchant,
            &again,
            CallReport {
                day: today,
                calls: 45,
            },
        )
        .await
        .unwrap();
    assert_eq!(second.granted, 15);
    assert_eq!(second.state.day_used, 60);
    stores
        .billing
        .record_calls(
            &merchant,
            CallReport {
                day: today,
                calls: 5,
            },
        )
        .await
        .unwrap();
    let usage = stores
        .billing
        .usage(&merchant, UsagePeriod::of(now))
        .await
        .unwrap();
    assert_eq!(usage.api_calls, 50);
}

pub async fn usage_sums_a_period(stores: Stores) {
    let (merchant, _) = seeded_merchant(&stores).await;
    let (other, _) = seeded_merchant(&stores).await;
    let october = UsagePeriod::parse("2026-10").unwrap();
    let november = october.next();
    stores
        .seed
        .metered(&merchant, Metric::Consents, october, 7)
        .await;
    stores
        .seed
        .metered(&merchant, Metric::Mandates, october, 2)
        .await;
    stores
        .seed
        .metered(&merchant, Metric::Consents, november, 100)
        .await;
    stores
        .seed
        .metered(&other, Metric::Consents, october, 9)
        .await;
    let day = |text| budget::day_of(at(text));
    for (text, calls) in [
        ("2026-10-01T00:00:00.000Z", 10),
        ("2026-10-31T23:59:59.999Z", 5),
        ("2026-11-01T00:00:00.000Z", 1_000),
    ] {
        stores
            .billing
            .record_calls(
                &merchant,
                CallReport {
                    day: day(text),
                    calls,
                },
            )
            .await
            .unwrap();
    }
    let usage = stores.billing.usage(&merchant, october).await.unwrap();
    assert_eq!(
        usage,
        Usage {
            metered: [(Metric::Consents, 7), (Metric::Mandates, 2)]
                .into_iter()
                .collect(),
            api_calls: 15,
        }
    );
    let nothing = stores
        .billing
        .usage(&merchant, UsagePeriod::parse("2025-01").unwrap())
        .await
        .unwrap();
    assert_eq!(nothing, Usage::default());
}

fn new_invoice(merchant: &MerchantId, period: &str, issued_at: Timestamp) -> invoice::Invoice {
    let id: InvoiceId = ids().next();
    invoice::issue(
        id,
        merchant.clone(),
        &PlanTerms::standard(Plan::Basic),
        UsagePeriod::parse(period).unwrap(),
        &Usage {
            metered: [(Metric::Verifications, 3)].into_iter().collect(),
            api_calls: 0,
        },
        issued_at,
    )
}

pub async fn one_invoice_per_merchant_and_period_even_when_racing(stores: Stores) {
    let (merchant, _) = seeded_merchant(&stores).await;
    let issued = at("2026-11-01T00:00:05.000Z");
    let inserted = join_all((0..8).map(|_| {
        let billing = stores.billing.clone();
        let invoice = new_invoice(&merchant, "2026-10", issued);
        async move { billing.insert_invoice(&invoice).await.unwrap() }
    }))
    .await;
    assert_eq!(
        inserted.iter().filter(|won| **won).count(),
        1,
        "{inserted:?}"
    );
    let page = stores
        .billing
        .invoices(
            &InvoiceQuery {
                merchant_id: merchant.clone(),
                period: None,
                status: None,
                now: issued,
            },
            PageRequest::new(None, None).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    let stored = &page.items[0];
    assert_eq!(stored.amount_cents, 7_900 + 150);
    assert_eq!(stored.items.len(), 2);
    assert_eq!(stored.items[0].description, "Basic plan, 2026-10");
    assert_eq!(stored.due_at, issued.plus(PAYMENT_TERM));
    assert_eq!(
        stores.billing.invoice(&stored.id).await.unwrap().as_ref(),
        Some(stored)
    );
    let unknown: InvoiceId = ids().next();
    assert_eq!(stores.billing.invoice(&unknown).await.unwrap(), None);
}

pub async fn invoices_list_by_period_and_status_as_of_now(stores: Stores) {
    let (merchant, _) = seeded_merchant(&stores).await;
    let (other, _) = seeded_merchant(&stores).await;
    let september = new_invoice(&merchant, "2026-09", at("2026-10-01T00:00:00.000Z"));
    let october = new_invoice(&merchant, "2026-10", at("2026-11-01T00:00:00.000Z"));
    for invoice in [
        &september,
        &october,
        &new_invoice(&other, "2026-10", october.issued_at),
    ] {
        assert!(stores.billing.insert_invoice(invoice).await.unwrap());
    }
    let list = |period: Option<&str>, status: Option<InvoiceStatus>, now: Timestamp| {
        let billing = stores.billing.clone();
        let query = InvoiceQuery {
            merchant_id: merchant.clone(),
            period: period.map(|text| UsagePeriod::parse(text).unwrap()),
            status,
            now,
        };
        async move {
            billing
                .invoices(&query, PageRequest::new(None, None).unwrap())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|invoice| invoice.id)
                .collect::<Vec<_>>()
        }
    };
    let now = at("2026-11-02T00:00:00.000Z");
    assert_eq!(
        list(None, None, now).await,
        [october.id.clone(), september.id.clone()],
        "newest period first, one merchant only"
    );
    assert_eq!(
        list(Some("2026-09"), None, now).await,
        std::slice::from_ref(&september.id)
    );
    // September's invoice was due on 15 October: it reads overdue before any sweep.
    assert_eq!(
        list(None, Some(InvoiceStatus::Overdue), now).await,
        std::slice::from_ref(&september.id)
    );
    assert_eq!(
        list(None, Some(InvoiceStatus::Pending), now).await,
        std::slice::from_ref(&october.id)
    );
    let later = now.plus(Duration::from_secs(30 * 24 * 3600));
    assert_eq!(list(None, Some(InvoiceStatus::Pending), later).await, []);
    let second_page = stores
        .billing
        .invoices(
            &InvoiceQuery {
                merchant_id: merchant.clone(),
                period: None,
                status: None,
                now,
            },
            PageRequest::new(Some(2), Some(1)).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(second_page.total, 2);
    assert_eq!(
        second_page.items.iter().map(|i| &i.id).collect::<Vec<_>>(),
        [&september.id]
    );
}

pub async fn paying_and_lapsing_are_stored_once(stores: Stores) {
    let (merchant, _) = seeded_merchant(&stores).await;
    let issued = at("2026-10-01T00:00:00.000Z");
    let late = new_invoice(&merchant, "2026-09", issued);
    let paid = new_invoice(&merchant, "2026-08", issued);
    for invoice in [&late, &paid] {
        assert!(stores.billing.insert_invoice(invoice).await.unwrap());
    }
    let paid_at = at("2026-10-03T10:00:00.000Z");
    let first = stores.billing.mark_paid(&paid.id, paid_at).await.unwrap();
    assert_eq!(
        (first.status, first.paid_at),
        (InvoiceStatus::Paid, Some(paid_at))
    );
    let again = stores
        .billing
        .mark_paid(&paid.id, paid_at.plus(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(again.paid_at, Some(paid_at), "paid once");

    let after_due = issued.plus(PAYMENT_TERM);
    assert_eq!(stores.billing.mark_overdue(after_due).await.unwrap(), 1);
    assert_eq!(stores.billing.mark_overdue(after_due).await.unwrap(), 0);
    let stored = stores.billing.invoice(&late.id).await.unwrap().unwrap();
    assert_eq!(stored.status, InvoiceStatus::Overdue);
    // An overdue invoice can still be paid.
    let settled = stores.billing.mark_paid(&late.id, after_due).await.unwrap();
    assert_eq!(settled.status, InvoiceStatus::Paid);
    let unknown: InvoiceId = ids().next();
    assert!(matches!(
        stores.billing.mark_paid(&unknown, after_due).await,
        Err(StoreError::NotFound)
    ));
}

pub async fn merchants_page_by_id_and_creation(stores: Stores) {
    let mut created = Vec::new();
    for _ in 0..3 {
        created.push(seeded_merchant(&stores).await.0);
    }
    let mut seen = Vec::new();
    let mut after: Option<MerchantId> = None;
    loop {
        let page = stores
            .billing
            .merchants_after(after.as_ref(), at("2100-01-01T00:00:00.000Z"), 2)
            .await
            .unwrap();
        assert!(page.len() <= 2);
        let Some((last, _)) = page.last() else { break };
        after = Some(last.clone());
        seen.extend(page.into_iter().map(|(id, _)| id));
    }
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "ordered by id");
    for id in &created {
        assert!(seen.contains(id));
    }
    // Seeded merchants were created at the epoch: none existed before it.
    let before_any = stores
        .billing
        .merchants_after(None, Timestamp::from_millis(0), 10)
        .await
        .unwrap();
    assert!(before_any.is_empty(), "{before_any:?}");
    assert!(
        created
            .iter()
            .all(|id| id.as_str().starts_with(MerchantId::PREFIX))
    );
}
