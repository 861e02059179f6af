#![doc = include_str!("../README.md")]

pub mod budget;
pub mod invoice;
mod limiter;
pub mod plan;
mod plans;
pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use invoice::{Invoice, InvoiceItem, InvoiceStatus};
pub use limiter::{LEASE_TTL, RateLimitGate};
pub use plan::{CustomLimits, Plan, PlanTerms, RateLimits};
pub use plans::{PLAN_CACHE_TTL, PlanCache, PlanMetering};
pub use ports::{BillingStore, CallReport, InvoiceQuery, StoreError, Usage};
pub use service::{BillingError, BillingService, ClosedPeriod, MetricUsage, UsageSummary};
