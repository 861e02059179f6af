//! Merchant onboarding: emailed dashboard links and the corporate registry.

use secrecy::SecretString;

use super::{ConfigError, normalise_base_url, secret};

/// Which corporate registry checks business registrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RegistryKind {
    /// A test registry: every number matches except `000000000`.
    Sandbox,
    /// A provider over HTTP (`IDC_REGISTRY_URL`).
    Http,
}

#[derive(Debug, Clone, clap::Args)]
pub struct MerchantArgs {
    /// Base URL of the merchant dashboard, used in emailed links (default: the base URL).
    #[arg(long, env = "IDC_DASHBOARD_URL", global = true)]
    pub dashboard_url: Option<String>,

    /// The corporate registry: `sandbox` (a test registry; see docs) or `http`.
    #[arg(
        long,
        env = "IDC_REGISTRY",
        value_enum,
        default_value = "sandbox",
        global = true
    )]
    pub registry: RegistryKind,

    /// The registry provider's endpoint when `IDC_REGISTRY=http`.
    #[arg(long, env = "IDC_REGISTRY_URL", global = true)]
    pub registry_url: Option<String>,

    /// One header sent to the registry provider, e.g. `Authorization: Bearer abc`.
    #[arg(long, env = "IDC_REGISTRY_AUTH_HEADER", value_parser = secret, hide_env_values = true, global = true)]
    pub registry_auth_header: Option<SecretString>,

    /// How many Argon2 password hashes (about 19 MiB each) may run at once; sign-ins beyond
    /// it wait up to 2 s, then get 429 with Retry-After.
    #[arg(
        long,
        env = "IDC_PASSWORD_HASH_CONCURRENCY",
        default_value_t = 4,
        value_parser = clap::value_parser!(u16).range(1..=256),
        global = true
    )]
    pub password_hash_concurrency: u16,
}

/// The corporate registry to use.
#[derive(Debug, Clone)]
pub enum RegistrySettings {
    Sandbox,
    Http {
        url: String,
        auth_header: Option<SecretString>,
    },
}

#[derive(Debug, Clone)]
pub struct MerchantConfig {
    /// Base URL of emailed dashboard links, without a trailing slash.
    pub dashboard_url: String,
    pub registry: RegistrySettings,
    pub password_hash_concurrency: u16,
}

impl MerchantArgs {
    pub fn resolve(self, base_url: &str) -> Result<MerchantConfig, ConfigError> {
        let dashboard_url = match self.dashboard_url {
            Some(url) => normalise_base_url(url).map_err(|_| ConfigError::DashboardUrl)?,
            None => base_url.to_owned(),
        };
        let registry = match self.registry {
            RegistryKind::Sandbox => RegistrySettings::Sandbox,
            RegistryKind::Http => RegistrySettings::Http {
                url: self.registry_url.ok_or(ConfigError::RegistryUrl)?,
                auth_header: self.registry_auth_header,
            },
        };
        Ok(MerchantConfig {
            dashboard_url,
            registry,
            password_hash_concurrency: self.password_hash_concurrency,
        })
    }
}
