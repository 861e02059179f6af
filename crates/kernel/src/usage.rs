//! Usage metering: what a metered action costs against a merchant's monthly quota.
//!
//! Billing decides *whether* and *against which limit* an action counts ([`Metering`]); the
//! domain that performs the action hands the resulting [`Charge`]s to its store together with
//! the object and its events, and the store applies them **in the same transaction**: the
//! counter moves only if it is under the limit, otherwise nothing at all is written and the
//! store's port answers its quota variant. So there is never an object without its usage, nor
//! usage without its object, and a quota is not a read followed by a separate write.

use std::fmt;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::environment::Environment;
use crate::id::{ApplicationId, MerchantId};

/// The metered actions of the usage summary (spec §2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Consent sessions created (OAuth requests included).
    Consents,
    /// Successful passkey assertions (`auth.success`).
    Authentications,
    /// Identity verifications requested.
    Verifications,
    /// Mandates created.
    Mandates,
}

impl Metric {
    pub const ALL: [Metric; 4] = [
        Metric::Consents,
        Metric::Authentications,
        Metric::Verifications,
        Metric::Mandates,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Consents => "consents",
            Metric::Authentications => "authentications",
            Metric::Verifications => "verifications",
            Metric::Mandates => "mandates",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|metric| metric.as_str() == text)
    }
}

/// A calendar month in UTC, `YYYY-MM`: the unit of quotas and invoices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UsagePeriod {
    year: i32,
    month: u8,
}

impl UsagePeriod {
    /// The period `at` falls in.
    pub fn of(at: Timestamp) -> Self {
        let (year, month) = at.year_month();
        Self { year, month }
    }

    /// `YYYY-MM` with a month from 01 to 12 and a four-digit year.
    pub fn parse(text: &str) -> Option<Self> {
        let (year, month) = text.split_once('-')?;
        if year.len() != 4 || month.len() != 2 {
            return None;
        }
        let year: i32 = year.parse().ok()?;
        let month: u8 = month.parse().ok()?;
        ((1..=12).contains(&month) && year >= 1970).then_some(Self { year, month })
    }

    pub fn year(self) -> i32 {
        self.year
    }

    pub fn month(self) -> u8 {
        self.month
    }

    /// Midnight UTC on the first day of the month.
    pub fn starts_at(self) -> Timestamp {
        let month = time::Month::try_from(self.month).unwrap_or(time::Month::January);
        let start = time::Date::from_calendar_date(self.year, month, 1)
            .map(|date| date.midnight().assume_utc().unix_timestamp())
            .unwrap_or(0);
        Timestamp::from_millis(start.saturating_mul(1000))
    }

    pub fn next(self) -> Self {
        if self.month == 12 {
            Self {
                year: self.year + 1,
                month: 1,
            }
        } else {
            Self {
                year: self.year,
                month: self.month + 1,
            }
        }
    }

    pub fn previous(self) -> Self {
        if self.month == 1 {
            Self {
                year: self.year - 1,
                month: 12,
            }
        } else {
            Self {
                year: self.year,
                month: self.month - 1,
            }
        }
    }
}

impl fmt::Display for UsagePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// One metered action to record with the object it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub merchant_id: MerchantId,
    pub metric: Metric,
    pub period: UsagePeriod,
    /// The quota for this merchant, metric and period; `None` is unlimited (still counted).
    pub limit: Option<u64>,
}

/// A quota that a write would have exceeded; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("The monthly {} quota of this plan is used up", metric.as_str())]
pub struct QuotaExceeded {
    pub metric: Metric,
    pub period: UsagePeriod,
}

impl QuotaExceeded {
    /// Seconds from `now` until the next period starts and the quota is fresh (at least 1).
    pub fn retry_after_secs(&self, now: Timestamp) -> u64 {
        self.period.next().starts_at().since(now).as_secs().max(1)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("usage metering failed")]
pub struct MeteringError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Decides what an action costs.
///
/// Contract: `charge` returns the charge for one action of `metric` by `application` in
/// `environment` at `at`, or `None` when it is not counted (sandbox traffic is never counted).
/// It reads configuration only and writes nothing: the store applies the charge with the
/// action.
#[async_trait]
pub trait Metering: Send + Sync + fmt::Debug {
    async fn charge(
        &self,
        application: &ApplicationId,
        environment: Environment,
        metric: Metric,
        at: Timestamp,
    ) -> Result<Option<Charge>, MeteringError>;
}

/// No billing: nothing is counted.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unmetered;

#[async_trait]
impl Metering for Unmetered {
    async fn charge(
        &self,
        _: &ApplicationId,
        _: Environment,
        _: Metric,
        _: Timestamp,
    ) -> Result<Option<Charge>, MeteringError> {
        Ok(None)
    }
}

/// Usage counters in memory, for stores' in-memory fakes: charges are counted all or none, the
/// way a store counts them in the transaction of the write they pay for.
#[derive(Debug, Clone, Default)]
pub struct UsageLedger {
    used: std::collections::HashMap<(MerchantId, Metric, UsagePeriod), u64>,
}

impl UsageLedger {
    /// Counts every charge, or none when one is over its quota (that one is the error).
    pub fn charge(&mut self, charges: &[Charge]) -> Result<(), QuotaExceeded> {
        let key = |charge: &Charge| (charge.merchant_id.clone(), charge.metric, charge.period);
        for charge in charges {
            let used = self.used.get(&key(charge)).copied().unwrap_or(0);
            if charge.limit.is_some_and(|limit| used >= limit) {
                return Err(QuotaExceeded {
                    metric: charge.metric,
                    period: charge.period,
                });
            }
        }
        for charge in charges {
            *self.used.entry(key(charge)).or_default() += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_calendar_months() {
        let at = Timestamp::parse_rfc3339("2026-12-31T23:59:59.999Z").unwrap();
        let period = UsagePeriod::of(at);
        assert_eq!(period.to_string(), "2026-12");
        assert_eq!(period.next().to_string(), "2027-01");
        assert_eq!(period.previous().to_string(), "2026-11");
        assert_eq!(
            UsagePeriod::parse("2026-01")
                .unwrap()
                .previous()
                .to_string(),
            "2025-12"
        );
        for bad in [
            "2026-13", "2026-00", "26-01", "2026-1", "2026/01", "abcd-ef", "",
        ] {
            assert_eq!(UsagePeriod::parse(bad), None, "{bad}");
        }
        assert_eq!(
            UsagePeriod::parse("2026-11")
                .map(|p| p.to_string())
                .as_deref(),
            Some("2026-11")
        );
        assert_eq!(period.starts_at().to_rfc3339(), "2026-12-01T00:00:00.000Z");
        let exceeded = QuotaExceeded {
            metric: Metric::Consents,
            period,
        };
        assert_eq!(exceeded.retry_after_secs(at), 1);
        let mid = Timestamp::parse_rfc3339("2026-12-31T23:00:00.000Z").unwrap();
        assert_eq!(exceeded.retry_after_secs(mid), 3600);
    }

    #[test]
    fn metrics_round_trip() {
        for metric in Metric::ALL {
            assert_eq!(Metric::parse(metric.as_str()), Some(metric));
        }
        assert_eq!(Metric::parse("calls"), None);
    }
}
