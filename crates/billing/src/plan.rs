//! Plans (spec §8, CONTRACT §7): request limits, monthly quotas and the monthly fee.

use idconsent_kernel::{Metric, ValidationErrors};

/// A billing plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plan {
    Free,
    Basic,
    Growth,
    Enterprise,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Free, Plan::Basic, Plan::Growth, Plan::Enterprise];

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Basic => "basic",
            Plan::Growth => "growth",
            Plan::Enterprise => "enterprise",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|plan| plan.as_str() == text)
    }

    /// The monthly fee in US cents.
    pub fn monthly_fee_cents(self) -> i64 {
        match self {
            Plan::Free => 0,
            Plan::Basic => 7_900,
            Plan::Growth => 14_900,
            Plan::Enterprise => 49_900,
        }
    }

    /// The plan's standard request limits; an enterprise merchant's are set by the operator
    /// and start at these.
    pub fn standard_limits(self) -> RateLimits {
        let (per_minute, per_day, concurrent) = match self {
            Plan::Free => (60, Some(1_000), 5),
            Plan::Basic => (300, Some(50_000), 25),
            Plan::Growth => (1_000, Some(500_000), 50),
            Plan::Enterprise => (10_000, None, 500),
        };
        RateLimits {
            per_minute,
            per_day,
            concurrent,
        }
    }

    /// The monthly quota of `metric`; `None` is unlimited (enterprise).
    pub fn quota(self, metric: Metric) -> Option<u64> {
        let [consents, authentications, verifications, mandates] = match self {
            Plan::Free => [100, 1_000, 10, 10],
            Plan::Basic => [5_000, 50_000, 500, 500],
            Plan::Growth => [50_000, 500_000, 5_000, 5_000],
            Plan::Enterprise => return None,
        };
        Some(match metric {
            Metric::Consents => consents,
            Metric::Authentications => authentications,
            Metric::Verifications => verifications,
            Metric::Mandates => mandates,
        })
    }
}

/// Requests a merchant may make, across all its keys, applications and server processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// Requests per minute, smoothed (GCRA: at most this many at once, then one every
    /// `60 s / per_minute`).
    pub per_minute: u64,
    /// Requests per UTC calendar day; `None` is unlimited.
    pub per_day: Option<u64>,
    /// Requests in flight at once.
    pub concurrent: u64,
}

/// The largest custom limits an operator may set: beyond them a limit protects nothing.
pub const MAX_PER_MINUTE: u64 = 10_000_000;
pub const MAX_CONCURRENT: u64 = 100_000;

/// A merchant's plan with the limits it applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanTerms {
    pub plan: Plan,
    pub limits: RateLimits,
}

impl PlanTerms {
    pub fn standard(plan: Plan) -> Self {
        Self {
            plan,
            limits: plan.standard_limits(),
        }
    }

    pub fn quota(&self, metric: Metric) -> Option<u64> {
        self.plan.quota(metric)
    }
}

/// Custom limits as the operator sends them; absent fields keep the plan's standard values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomLimits {
    pub per_minute: Option<u64>,
    /// `Some(None)`: explicitly unlimited.
    pub per_day: Option<Option<u64>>,
    pub concurrent: Option<u64>,
}

/// The operator's `{ plan, limits? }` judged: unknown plans and custom limits outside an
/// enterprise plan are refused, field by field.
pub fn choose_plan(
    plan: &str,
    limits: Option<&CustomLimits>,
) -> Result<PlanTerms, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let Some(plan) = Plan::parse(plan) else {
        errors.push("plan", "must be free, basic, growth or enterprise");
        return Err(errors);
    };
    let mut terms = PlanTerms::standard(plan);
    let Some(custom) = limits else {
        return Ok(terms);
    };
    if plan != Plan::Enterprise {
        errors.push("limits", "only an enterprise plan takes custom limits");
        return Err(errors);
    }
    if let Some(per_minute) = custom.per_minute {
        if (1..=MAX_PER_MINUTE).contains(&per_minute) {
            terms.limits.per_minute = per_minute;
        } else {
            errors.push(
                "limits.requestsPerMinute",
                format!("must be between 1 and {MAX_PER_MINUTE}"),
            );
        }
    }
    if let Some(per_day) = custom.per_day {
        match per_day {
            Some(0) => errors.push(
                "limits.requestsPerDay",
                "must be at least 1, or null for unlimited",
            ),
            other => terms.limits.per_day = other,
        }
    }
    if let Some(concurrent) = custom.concurrent {
        if (1..=MAX_CONCURRENT).contains(&concurrent) {
            terms.limits.concurrent = concurrent;
        } else {
            errors.push(
                "limits.concurrent",
                format!("must be between 1 and {MAX_CONCURRENT}"),
            );
        }
    }
    errors.finish().map(|()| terms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(errors: &ValidationErrors) -> Vec<&str> {
        errors
            .fields()
            .iter()
            .map(|error| error.field.as_str())
            .collect()
    }

    #[test]
    fn standard_plans_follow_the_spec() {
        let free = PlanTerms::standard(Plan::Free);
        assert_eq!(
            (
                free.limits.per_minute,
                free.limits.per_day,
                free.limits.concurrent
            ),
            (60, Some(1_000), 5)
        );
        assert_eq!(free.quota(Metric::Mandates), Some(10));
        assert_eq!(Plan::Growth.quota(Metric::Authentications), Some(500_000));
        assert_eq!(
            PlanTerms::standard(Plan::Enterprise).quota(Metric::Consents),
            None
        );
        assert_eq!(Plan::Basic.monthly_fee_cents(), 7_900);
        for plan in Plan::ALL {
            assert_eq!(Plan::parse(plan.as_str()), Some(plan));
        }
    }

    #[test]
    fn custom_limits_only_for_enterprise_and_within_bounds() {
        let custom = CustomLimits {
            per_minute: Some(5_000),
            per_day: Some(None),
            concurrent: Some(80),
        };
        let terms = choose_plan("enterprise", Some(&custom)).unwrap();
        assert_eq!(
            terms.limits,
            RateLimits {
                per_minute: 5_000,
                per_day: None,
                concurrent: 80
            }
        );
        let refused = choose_plan("growth", Some(&custom)).unwrap_err();
        assert_eq!(fields(&refused), ["limits"]);
        assert_eq!(fields(&choose_plan("gold", None).unwrap_err()), ["plan"]);
        let bad = CustomLimits {
            per_minute: Some(0),
            per_day: Some(Some(0)),
            concurrent: Some(MAX_CONCURRENT + 1),
        };
        assert_eq!(
            fields(&choose_plan("enterprise", Some(&bad)).unwrap_err()),
            [
                "limits.requestsPerMinute",
                "limits.requestsPerDay",
                "limits.concurrent"
            ]
        );
    }
}
