//! Billing: whether plan rate limits are enforced on signed requests.

#[derive(Debug, Clone, clap::Args)]
pub struct BillingArgs {
    /// Enforce each merchant's plan limits (per minute, per day, in flight) on signed requests,
    /// with `RateLimit-*` headers. `false` turns the rate-limit gate off (a single-tenant
    /// deployment, a benchmark of the gate's cost); monthly quotas and usage still apply.
    #[arg(
        long,
        env = "IDC_RATE_LIMITS",
        global = true,
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub rate_limits: bool,
}

#[derive(Debug, Clone)]
pub struct BillingConfig {
    pub rate_limits: bool,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self { rate_limits: true }
    }
}

impl BillingArgs {
    pub fn resolve(self) -> BillingConfig {
        BillingConfig {
            rate_limits: self.rate_limits,
        }
    }
}
