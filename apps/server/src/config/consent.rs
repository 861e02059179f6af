//! Consent sessions: their lifetime and the QR code's URI scheme.

use std::time::Duration;

use super::ConfigError;

#[derive(Debug, Clone, clap::Args)]
pub struct ConsentArgs {
    /// How long a consent session waits for a decision, in seconds.
    #[arg(
        long,
        env = "IDC_CONSENT_TTL_SECONDS",
        default_value_t = 300,
        global = true
    )]
    pub consent_ttl_seconds: u64,

    /// The mobile app's URI scheme: QR codes encode `<scheme>://auth/<sessionId>`.
    #[arg(
        long,
        env = "IDC_APP_SCHEME",
        default_value = "idconsent",
        global = true
    )]
    pub app_scheme: String,
}

#[derive(Debug, Clone)]
pub struct ConsentConfig {
    pub ttl: Duration,
    pub app_scheme: String,
}

impl Default for ConsentConfig {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(300),
            app_scheme: "idconsent".into(),
        }
    }
}

impl ConsentArgs {
    pub fn resolve(self) -> Result<ConsentConfig, ConfigError> {
        if !(1..=86_400).contains(&self.consent_ttl_seconds) {
            return Err(ConfigError::ConsentTtl);
        }
        let scheme_ok = self
            .app_scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase())
            && self.app_scheme.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.')
            });
        if !scheme_ok {
            return Err(ConfigError::AppScheme);
        }
        Ok(ConsentConfig {
            ttl: Duration::from_secs(self.consent_ttl_seconds),
            app_scheme: self.app_scheme,
        })
    }
}
