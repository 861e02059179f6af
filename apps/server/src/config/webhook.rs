//! Webhooks and every other callback URL: retries, and which hosts they may target.

use idconsent_webhook::RetrySchedule;

use super::ConfigError;

#[derive(Debug, Clone, clap::Args)]
pub struct WebhookArgs {
    /// Waits between webhook attempts, e.g. `5s,5m,30m,2h,5h,10h,10h` (the default).
    #[arg(long, env = "IDC_WEBHOOK_RETRY_SCHEDULE", global = true)]
    pub webhook_retry_schedule: Option<String>,

    /// Allow callback URLs on private, loopback and link-local hosts (default: true in dev,
    /// false in production).
    #[arg(long, env = "IDC_ALLOW_PRIVATE_CALLBACKS", global = true)]
    pub allow_private_callbacks: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct WebhookConfig {
    pub retry: RetrySchedule,
    /// Whether callback URLs (webhooks, consent callbacks) may target private hosts.
    pub allow_private_callbacks: bool,
}

impl WebhookArgs {
    pub fn resolve(self, production: bool) -> Result<WebhookConfig, ConfigError> {
        let retry = match &self.webhook_retry_schedule {
            Some(text) => RetrySchedule::parse(text)?,
            None => RetrySchedule::default(),
        };
        Ok(WebhookConfig {
            retry,
            allow_private_callbacks: self.allow_private_callbacks.unwrap_or(!production),
        })
    }
}
