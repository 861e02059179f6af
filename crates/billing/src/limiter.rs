//! The rate-limit gate: every signed request is admitted within its merchant's plan limits —
//! per minute and per day from the shared budget (leased in slices, see [`crate::budget`]),
//! requests in flight counted in this process — and its response carries `RateLimit-*`
//! headers. Live admitted calls are counted for the usage summary and reported with the next
//! lease or by [`RateLimitGate::flush`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::lock::Mutex as AsyncMutex;
use idconsent_access::{Admission, Gate, GateRequest, Refusal, RefusalKind};
use idconsent_kernel::id::MerchantId;
use idconsent_kernel::{Clock, Environment, FieldError, Timestamp};

use crate::budget::{self, LeaseRequest, Window};
use crate::plan::PlanTerms;
use crate::plans::PlanCache;
use crate::ports::{BillingStore, CallReport};

/// How long a process may spend a lease before giving back what is left: a fifth of the
/// minute, so an idle process cannot hoard part of a merchant's budget for long.
pub const LEASE_TTL: Duration = Duration::from_secs(12);

/// A merchant whose lease ended this long ago (milliseconds) is forgotten by the next flush.
const IDLE_MILLIS: i64 = 10 * 60_000;

/// A merchant's allowance in this process.
#[derive(Debug, Default)]
struct Allowance {
    in_flight: Arc<AtomicU64>,
    lease: AsyncMutex<Lease>,
}

#[derive(Debug, Default)]
struct Lease {
    /// Requests leased and not yet admitted.
    tokens: u64,
    /// The UTC day of the lease.
    day: i64,
    expires_at: i64,
    /// The shared budget refused until then (milliseconds): no database call until it passes.
    blocked: Option<(Window, i64)>,
    /// The budget as of the last lease, for the headers.
    tat_micros: i64,
    day_used: u64,
    /// Live calls admitted since the last report, on `day`.
    unreported: u64,
    /// The plan the lease was taken under: a new plan starts a new lease.
    terms: Option<PlanTerms>,
}

/// A request in flight; its slot frees when dropped.
#[derive(Debug)]
struct InFlight(Arc<AtomicU64>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
pub struct RateLimitGate {
    plans: Arc<PlanCache>,
    store: Arc<dyn BillingStore>,
    clock: Arc<dyn Clock>,
    /// `false`: admit everything and only count live calls (limits turned off).
    enforce: bool,
    allowances: Mutex<HashMap<MerchantId, Arc<Allowance>>>,
}

impl RateLimitGate {
    /// A gate that enforces the plans' limits.
    pub fn new(plans: Arc<PlanCache>, store: Arc<dyn BillingStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            plans,
            store,
            clock,
            enforce: true,
            allowances: Mutex::default(),
        }
    }

    /// A gate that limits nothing and adds no headers, but still counts live calls for the
    /// usage summary (`IDC_RATE_LIMITS=false`).
    pub fn counting_only(mut self) -> Self {
        self.enforce = false;
        self
    }

    /// Counts a live call without limiting it; a new day first reports the last one's.
    async fn count(&self, merchant: &MerchantId) -> Result<Admission, Refusal> {
        let allowance = self.allowance(merchant);
        let mut lease = allowance.lease.lock().await;
        let today = budget::day_of(self.clock.now());
        if lease.day != today {
            if lease.unreported > 0 {
                let calls = CallReport {
                    day: lease.day,
                    calls: lease.unreported,
                };
                if self.store.record_calls(merchant, calls).await.is_ok() {
                    lease.unreported = 0;
                }
            }
            if lease.unreported == 0 {
                lease.day = today;
            }
        }
        lease.unreported += 1;
        Ok(Admission::default())
    }

    fn allowance(&self, merchant: &MerchantId) -> Arc<Allowance> {
        let mut allowances = self
            .allowances
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Looked up before inserting: the id is cloned only for a merchant new to this process.
        if let Some(allowance) = allowances.get(merchant) {
            return allowance.clone();
        }
        allowances.entry(merchant.clone()).or_default().clone()
    }

    /// Reports every merchant's unreported live calls (a worker calls this every few seconds,
    /// and the server once more at shutdown) and forgets merchants idle for a while.
    pub async fn flush(&self) -> Result<u64, crate::ports::StoreError> {
        let now = self.clock.now().as_millis();
        let merchants: Vec<(MerchantId, Arc<Allowance>)> = {
            let allowances = self
                .allowances
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            allowances
                .iter()
                .map(|(id, allowance)| (id.clone(), allowance.clone()))
                .collect()
        };
        let mut reported = 0;
        for (merchant, allowance) in merchants {
            reported += self.report_calls(&merchant, &allowance).await?;
            let mut allowances = self
                .allowances
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Forgotten only when nobody holds it (one reference here, one in the map; new
            // references are taken under the map's lock, held now) and a call counted since
            // the report above has not left it unreported: forgetting it would lose the call.
            let forgettable = Arc::strong_count(&allowance) == 2
                && allowance.lease.try_lock().is_some_and(|lease| {
                    lease.unreported == 0 && lease.expires_at + IDLE_MILLIS < now
                })
                && allowance.in_flight.load(Ordering::SeqCst) == 0;
            if forgettable {
                allowances.remove(&merchant);
            }
        }
        Ok(reported)
    }

    /// Reports one merchant's unreported live calls now (before its usage is read).
    pub async fn report(&self, merchant: &MerchantId) -> Result<u64, crate::ports::StoreError> {
        let allowance = {
            let allowances = self
                .allowances
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            allowances.get(merchant).cloned()
        };
        match allowance {
            Some(allowance) => self.report_calls(merchant, &allowance).await,
            None => Ok(0),
        }
    }

    async fn report_calls(
        &self,
        merchant: &MerchantId,
        allowance: &Allowance,
    ) -> Result<u64, crate::ports::StoreError> {
        let mut lease = allowance.lease.lock().await;
        if lease.unreported == 0 {
            return Ok(0);
        }
        let calls = CallReport {
            day: lease.day,
            calls: lease.unreported,
        };
        self.store.record_calls(merchant, calls).await?;
        lease.unreported = 0;
        Ok(calls.calls)
    }
}

fn refusal(terms: &PlanTerms, window: Window, wait_millis: u64) -> Refusal {
    let retry_after = wait_millis.div_ceil(1000).max(1);
    let limits = terms.limits;
    let (limit, text) = match window {
        Window::Minute => (limits.per_minute, "requests per minute"),
        Window::Day => (limits.per_day.unwrap_or(0), "requests per day"),
        Window::Concurrent => (limits.concurrent, "requests at once"),
    };
    let message = format!(
        "Rate limit exceeded: {limit} {text} on the {} plan",
        terms.plan.as_str()
    );
    let mut refused = Refusal::new(RefusalKind::RateLimited, message.clone());
    refused.retry_after_secs = Some(retry_after);
    refused.details = vec![FieldError::new(window.field(), message)];
    refused.headers = vec![
        ("RateLimit-Limit", limit.to_string()),
        ("RateLimit-Remaining", "0".into()),
        ("RateLimit-Reset", retry_after.to_string()),
    ];
    refused
}

/// `RateLimit-*` for the tightest window as this process sees it after admitting a request.
fn headers(terms: &PlanTerms, lease: &Lease, now: Timestamp) -> Vec<(&'static str, String)> {
    let limits = terms.limits;
    let now_micros = now.as_millis().saturating_mul(1000);
    let interval = budget::interval_micros(limits.per_minute);
    let held = i64::try_from(lease.tokens).unwrap_or(i64::MAX);
    let minute_remaining = (budget::minute_free(lease.tat_micros, now_micros, limits.per_minute)
        + lease.tokens)
        .min(limits.per_minute);
    let spent_until = lease
        .tat_micros
        .saturating_sub(held.saturating_mul(interval))
        .max(now_micros);
    let minute_reset = u64::try_from(spent_until - now_micros)
        .unwrap_or(0)
        .div_ceil(1_000_000);
    let mut chosen = (limits.per_minute, minute_remaining, minute_reset);
    if let Some(per_day) = limits.per_day {
        let day_remaining = (per_day.saturating_sub(lease.day_used) + lease.tokens).min(per_day);
        if day_remaining < minute_remaining {
            let reset = budget::millis_to_next_day(now).div_ceil(1000);
            chosen = (per_day, day_remaining, reset);
        }
    }
    vec![
        ("RateLimit-Limit", chosen.0.to_string()),
        ("RateLimit-Remaining", chosen.1.to_string()),
        ("RateLimit-Reset", chosen.2.to_string()),
    ]
}

#[async_trait]
impl Gate for RateLimitGate {
    fn name(&self) -> &'static str {
        "rate_limit"
    }

    async fn admit(&self, request: &GateRequest<'_>) -> Result<Admission, Refusal> {
        let merchant = &request.caller.application.merchant_id;
        if !self.enforce {
            return match request.caller.environment {
                Environment::Live => self.count(merchant).await,
                Environment::Sandbox => Ok(Admission::default()),
            };
        }
        let unavailable = |_| {
            let mut refused = Refusal::new(
                RefusalKind::Unavailable,
                "Rate limits cannot be checked right now; retry shortly",
            );
            refused.retry_after_secs = Some(1);
            refused
        };
        let terms = self.plans.terms(merchant).await.map_err(unavailable)?;
        let allowance = self.allowance(merchant);

        // Concurrency first: it is local and costs nothing of the shared budget.
        if allowance.in_flight.fetch_add(1, Ordering::SeqCst) >= terms.limits.concurrent {
            allowance.in_flight.fetch_sub(1, Ordering::SeqCst);
            return Err(refusal(&terms, Window::Concurrent, 1_000));
        }
        let slot = InFlight(allowance.in_flight.clone());

        let mut lease = allowance.lease.lock().await;
        let now = self.clock.now();
        let now_millis = now.as_millis();
        if lease.terms != Some(terms) {
            // The operator changed the plan: judge afresh under the new limits.
            lease.terms = Some(terms);
            lease.blocked = None;
            lease.expires_at = 0;
        }
        if let Some((window, until)) = lease.blocked {
            if now_millis < until {
                let wait = u64::try_from(until - now_millis).unwrap_or(1);
                return Err(refusal(&terms, window, wait));
            }
            lease.blocked = None;
        }
        let today = budget::day_of(now);
        if lease.tokens == 0 || now_millis >= lease.expires_at || lease.day != today {
            let ask = LeaseRequest {
                now,
                limits: terms.limits,
                want: budget::slice(&terms.limits),
                returning: lease.tokens,
                returning_day: lease.day,
            };
            let calls = CallReport {
                day: lease.day,
                calls: lease.unreported,
            };
            let decision = self
                .store
                .lease(merchant, &ask, calls)
                .await
                .map_err(unavailable)?;
            lease.unreported = 0;
            lease.tokens = decision.granted;
            lease.day = today;
            lease.expires_at = now_millis + i64::try_from(LEASE_TTL.as_millis()).unwrap_or(0);
            lease.tat_micros = decision.state.tat_micros;
            lease.day_used = decision.state.day_used;
            if let Some((window, wait)) = decision.refused {
                let until = now_millis + i64::try_from(wait).unwrap_or(i64::MAX / 2);
                lease.blocked = Some((window, until));
                return Err(refusal(&terms, window, wait));
            }
        }
        lease.tokens -= 1;
        if request.caller.environment == Environment::Live {
            lease.unreported += 1;
        }
        Ok(Admission {
            headers: headers(&terms, &lease, now),
            holds: vec![Box::new(slot)],
        })
    }
}
