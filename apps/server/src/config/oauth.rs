//! OAuth: the authorization codes' lifetime and the access tokens' signing keys, which live in
//! the database (sealed under the master key) and are shared by every process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::ConfigError;

#[derive(Debug, Clone, clap::Args)]
pub struct OAuthArgs {
    /// A directory of ES256 keys from an earlier version (`keys.json` and `<kid>.pem`): imported
    /// into the database at start, once. Default: `<data dir>/oauth-keys` when it exists.
    #[arg(long, env = "IDC_OAUTH_KEYS_DIR", global = true)]
    pub oauth_keys_dir: Option<PathBuf>,

    /// How long an OAuth authorization code can be exchanged, in seconds.
    #[arg(
        long,
        env = "IDC_OAUTH_CODE_TTL_SECONDS",
        default_value_t = 600,
        global = true
    )]
    pub oauth_code_ttl_seconds: u64,

    /// After a key rotation, seconds before the new key signs (it is published at once); more
    /// than the reload interval, so every process knows a key before any signs with it.
    #[arg(
        long,
        env = "IDC_OAUTH_KEY_ACTIVATION_SECONDS",
        default_value_t = 60,
        global = true
    )]
    pub oauth_key_activation_seconds: u64,
}

#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// Where to import keys from, if anywhere.
    pub import_keys_from: Option<PathBuf>,
    pub code_ttl: Duration,
    pub key_activation_delay: Duration,
    /// How often each process reloads the signing keys (a quarter of the activation delay).
    pub key_reload_interval: Duration,
}

impl OAuthConfig {
    /// The defaults, importing from `import_keys_from`.
    pub fn new(import_keys_from: Option<PathBuf>) -> Self {
        Self {
            import_keys_from,
            code_ttl: Duration::from_secs(600),
            key_activation_delay: Duration::from_secs(60),
            key_reload_interval: Duration::from_secs(15),
        }
    }
}

impl OAuthArgs {
    pub fn resolve(self, data_dir: &Path) -> Result<OAuthConfig, ConfigError> {
        if !(4..=86_400).contains(&self.oauth_key_activation_seconds) {
            return Err(ConfigError::Invalid {
                variable: "IDC_OAUTH_KEY_ACTIVATION_SECONDS",
                reason: "must be between 4 and 86400".into(),
            });
        }
        let default_dir = data_dir.join("oauth-keys");
        let import_keys_from = self.oauth_keys_dir.or_else(|| {
            default_dir
                .join("keys.json")
                .exists()
                .then_some(default_dir)
        });
        let activation = Duration::from_secs(self.oauth_key_activation_seconds);
        Ok(OAuthConfig {
            import_keys_from,
            code_ttl: Duration::from_secs(self.oauth_code_ttl_seconds.clamp(1, 3600)),
            key_activation_delay: activation,
            key_reload_interval: activation / 4,
        })
    }
}
