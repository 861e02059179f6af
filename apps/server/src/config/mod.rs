//! Configuration: clap flags mirroring `IDC_*` environment variables, resolved and checked once
//! at start into a [`Config`]. Nothing else in the workspace reads the environment.

use std::convert::Infallible;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_access::Gate;
use idconsent_kernel::Clock;
use idconsent_store_diesel::DbOptions;
use idconsent_webhook::RetrySchedule;
use secrecy::{ExposeSecret, SecretString};

mod billing;
mod blobs;
mod consent;
mod identity;
mod merchant;
mod notify;
mod oauth;
mod passkeys;
mod signature;
mod untrusted;
mod webhook;

pub use billing::{BillingArgs, BillingConfig};
pub use blobs::{BlobArgs, BlobConfig, BlobStoreKind};
pub use consent::{ConsentArgs, ConsentConfig};
pub use identity::{IdentityArgs, IdentityConfig};
pub use merchant::{MerchantArgs, MerchantConfig, RegistryKind, RegistrySettings};
pub use notify::{NotifyArgs, NotifyConfig, SmsSettings, SmtpSettings};
pub use oauth::{OAuthArgs, OAuthConfig};
pub use passkeys::{PasskeyArgs, PasskeyConfig};
pub use signature::{SignatureArgs, SignatureConfig, TsaConfig};
pub use untrusted::{UntrustedArgs, UntrustedConfig};
pub use webhook::{WebhookArgs, WebhookConfig};

/// `dev` gives a working server with no setup (dev mailbox, generated keys); `production`
/// requires real secrets and never exposes development routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Dev,
    Production,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Readable lines for a terminal.
    Human,
    /// One JSON object per line, for log shippers.
    Json,
}

pub(crate) fn secret(text: &str) -> Result<SecretString, Infallible> {
    Ok(SecretString::from(text.to_owned()))
}

/// Flags and environment variables (CONTRACT §9). Every flag has an `IDC_*` twin.
#[derive(Debug, Clone, clap::Args)]
pub struct Settings {
    /// Address to listen on.
    #[arg(
        long,
        env = "IDC_BIND",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub bind: String,

    /// Dev mode only: allow a non-loopback `IDC_BIND`. Dev mode's mailbox
    /// (`/v1/dev/messages`) hands out every code it sent, so it listens on loopback unless this
    /// is set.
    #[arg(
        long,
        env = "IDC_DEV_ALLOW_REMOTE",
        default_value_t = false,
        global = true
    )]
    pub dev_allow_remote: bool,

    /// Public base URL of this service (default: http://<bind>).
    #[arg(long, env = "IDC_BASE_URL", global = true)]
    pub base_url: Option<String>,

    /// `sqlite://path` (embedded default) or `postgres://…`.
    #[arg(
        long,
        env = "IDC_DATABASE_URL",
        default_value = "sqlite://data/idconsent.db",
        hide_env_values = true,
        global = true
    )]
    pub database_url: String,

    /// Where generated keys, uploaded files and the default SQLite database live.
    #[arg(long, env = "IDC_DATA_DIR", default_value = "data", global = true)]
    pub data_dir: PathBuf,

    #[arg(
        long,
        env = "IDC_MODE",
        value_enum,
        default_value = "dev",
        global = true
    )]
    pub mode: Mode,

    /// Bearer token of the platform operator (`/v1/admin/…`). Generated into the data dir in dev.
    #[arg(long, env = "IDC_ADMIN_TOKEN", value_parser = secret, hide_env_values = true, global = true)]
    pub admin_token: Option<SecretString>,

    /// Standard base64 of 32 random bytes; encrypts secrets at rest. Generated into the data dir in dev.
    #[arg(long, env = "IDC_MASTER_KEY", value_parser = secret, hide_env_values = true, global = true)]
    pub master_key: Option<SecretString>,

    #[arg(
        long,
        env = "IDC_LOG_FORMAT",
        value_enum,
        default_value = "human",
        global = true
    )]
    pub log_format: LogFormat,

    /// HTTP worker threads (default: one per core).
    #[arg(long, env = "IDC_HTTP_WORKERS", global = true)]
    pub http_workers: Option<usize>,

    /// Database connections per pool.
    #[arg(
        long,
        env = "IDC_DB_MAX_CONNECTIONS",
        default_value_t = 16,
        global = true
    )]
    pub db_max_connections: u32,

    #[command(flatten)]
    pub blobs: BlobArgs,
    #[command(flatten)]
    pub notify: NotifyArgs,
    #[command(flatten)]
    pub merchant: MerchantArgs,
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    #[command(flatten)]
    pub consent: ConsentArgs,
    #[command(flatten)]
    pub oauth: OAuthArgs,
    #[command(flatten)]
    pub passkeys: PasskeyArgs,
    #[command(flatten)]
    pub signature: SignatureArgs,
    #[command(flatten)]
    pub billing: BillingArgs,
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub untrusted: UntrustedArgs,
}

/// The 32-byte key that encrypts secrets at rest. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterKey([u8; 32]);

impl MasterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    fn parse(text: &str) -> Result<Self, ConfigError> {
        let bytes = BASE64
            .decode(text.trim())
            .map_err(|_| ConfigError::MasterKeyFormat)?;
        bytes
            .try_into()
            .map(Self)
            .map_err(|_| ConfigError::MasterKeyFormat)
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey(***)")
    }
}

/// Checked configuration, ready to wire the service.
#[derive(Debug, Clone)]
pub struct Config {
    pub mode: Mode,
    pub bind: String,
    /// Without a trailing slash.
    pub base_url: String,
    pub database_url: SecretString,
    pub data_dir: PathBuf,
    pub admin_token: SecretString,
    pub master_key: MasterKey,
    pub log_format: LogFormat,
    pub http_workers: usize,
    pub db: DbOptions,
    pub blobs: BlobConfig,
    pub notify: NotifyConfig,
    pub merchant: MerchantConfig,
    pub webhooks: WebhookConfig,
    pub consent: ConsentConfig,
    pub oauth: OAuthConfig,
    pub passkeys: PasskeyConfig,
    pub signature: SignatureConfig,
    pub billing: BillingConfig,
    pub identity: IdentityConfig,
    /// The child processes that parse uploaded PDFs.
    pub untrusted: UntrustedConfig,
    /// Whether the server stops on SIGTERM/SIGINT itself (the binary); embedded servers in
    /// tests are stopped through their handle instead.
    pub handle_signals: bool,
    /// How often background workers poll when nothing woke them.
    pub worker_poll_interval: Duration,
    /// The clock every domain reads; `None` is the system clock. Tests set a `ManualClock`
    /// so that expiry and retention are tested without waiting.
    pub clock: Option<Arc<dyn Clock>>,
    /// Gates run after the deployment's own on every signed request (tests, embedders).
    pub extra_gates: Vec<Arc<dyn Gate>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is required when IDC_MODE=production")]
    RequiredInProduction(&'static str),
    #[error(
        "IDC_MASTER_KEY must be standard base64 of exactly 32 bytes (try: openssl rand -base64 32)"
    )]
    MasterKeyFormat,
    #[error("IDC_ADMIN_TOKEN must be at least 32 characters")]
    AdminTokenTooShort,
    #[error("IDC_BASE_URL must be an absolute http(s) URL without query or fragment")]
    BaseUrl,
    #[error("IDC_BIND must be host:port")]
    Bind,
    #[error("IDC_DASHBOARD_URL must be an absolute http(s) URL without query or fragment")]
    DashboardUrl,
    #[error("IDC_REGISTRY=http needs IDC_REGISTRY_URL")]
    RegistryUrl,
    #[error("IDC_WEBHOOK_RETRY_SCHEDULE: {0}")]
    RetrySchedule(#[from] idconsent_webhook::InvalidSchedule),
    #[error("IDC_CONSENT_TTL_SECONDS must be between 1 and 86400")]
    ConsentTtl,
    #[error("IDC_APP_SCHEME must be a URI scheme: a letter, then letters, digits, '+', '-' or '.'")]
    AppScheme,
    /// A setting of a domain that has no variant of its own.
    #[error("{variable}: {reason}")]
    Invalid {
        variable: &'static str,
        reason: String,
    },
    #[error("cannot use the data directory {path}: {source}")]
    DataDir {
        path: String,
        source: std::io::Error,
    },
}

impl Settings {
    /// Checks the settings and fills in dev defaults (generated keys in the data directory).
    pub fn resolve(self) -> Result<Config, ConfigError> {
        if !self.bind.contains(':') {
            return Err(ConfigError::Bind);
        }
        let base_url = normalise_base_url(
            self.base_url
                .unwrap_or_else(|| format!("http://{}", self.bind)),
        )?;
        let production = self.mode == Mode::Production;
        if !production && !self.dev_allow_remote && !is_loopback_bind(&self.bind) {
            return Err(ConfigError::Invalid {
                variable: "IDC_BIND",
                reason: "dev mode hands out every SMS and email code at /v1/dev/messages, so it \
                         listens on loopback only: bind to 127.0.0.1 or [::1], or set \
                         IDC_DEV_ALLOW_REMOTE=true"
                    .into(),
            });
        }
        let master_key = match self.master_key {
            Some(text) => MasterKey::parse(text.expose_secret())?,
            None if production => return Err(ConfigError::RequiredInProduction("IDC_MASTER_KEY")),
            None => MasterKey::parse(&dev_secret(&self.data_dir, "master.key", || {
                BASE64.encode(random_bytes::<32>())
            })?)?,
        };
        let admin_token = match self.admin_token {
            Some(token) if token.expose_secret().trim().len() < 32 => {
                return Err(ConfigError::AdminTokenTooShort);
            }
            Some(token) => token,
            None if production => return Err(ConfigError::RequiredInProduction("IDC_ADMIN_TOKEN")),
            None => SecretString::from(dev_secret(&self.data_dir, "admin.token", || {
                hex(&random_bytes::<24>())
            })?),
        };
        let merchant = self.merchant.resolve(&base_url)?;
        let oauth = self.oauth.resolve(&self.data_dir)?;
        let identity = self.identity.resolve(&self.data_dir)?;
        Ok(Config {
            mode: self.mode,
            bind: self.bind,
            base_url,
            database_url: SecretString::from(self.database_url),
            data_dir: self.data_dir,
            admin_token,
            master_key,
            log_format: self.log_format,
            http_workers: self
                .http_workers
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from)),
            db: DbOptions {
                max_connections: self.db_max_connections.max(1),
                ..DbOptions::default()
            },
            blobs: self.blobs.resolve()?,
            notify: self.notify.resolve(),
            merchant,
            webhooks: self.webhooks.resolve(production)?,
            consent: self.consent.resolve()?,
            oauth,
            passkeys: self.passkeys.resolve(),
            signature: self.signature.resolve()?,
            billing: self.billing.resolve(),
            identity,
            untrusted: self.untrusted.resolve()?,
            handle_signals: true,
            worker_poll_interval: Duration::from_secs(1),
            clock: None,
            extra_gates: Vec::new(),
        })
    }
}

impl Config {
    /// A dev-mode configuration on the given database, for embedding the server in tests:
    /// random port, fixed keys, no signal handling.
    pub fn for_tests(data_dir: PathBuf, database_url: String) -> Self {
        let identity = IdentityConfig {
            // Tests wait for a sweep, not a minute.
            image_sweep_interval: Duration::from_millis(200),
            ..IdentityConfig::in_data_dir(&data_dir)
        };
        Self {
            mode: Mode::Dev,
            bind: "127.0.0.1:0".into(),
            base_url: "http://127.0.0.1:0".into(),
            database_url: SecretString::from(database_url),
            data_dir,
            admin_token: SecretString::from("test-admin-token-0123456789abcdef".to_owned()),
            master_key: MasterKey::from_bytes([7; 32]),
            log_format: LogFormat::Human,
            http_workers: 2,
            db: DbOptions {
                max_connections: 4,
                min_idle: 1,
                ..DbOptions::default()
            },
            // As in production: the database on PostgreSQL, the data directory on SQLite.
            blobs: BlobConfig::Auto,
            // The tests enroll many users from one address (CONTRACT §9: a harness raises both).
            notify: NotifyConfig {
                send_limits: idconsent_notification::SendLimitSettings {
                    per_client: 1_000_000,
                    global: 1_000_000,
                },
                ..NotifyConfig::default()
            },
            merchant: MerchantConfig {
                dashboard_url: "http://dashboard.test".into(),
                registry: RegistrySettings::Sandbox,
                password_hash_concurrency: 4,
            },
            webhooks: WebhookConfig {
                retry: RetrySchedule::parse("200ms,200ms,200ms,200ms").unwrap_or_default(),
                allow_private_callbacks: true,
            },
            consent: ConsentConfig::default(),
            oauth: OAuthConfig {
                key_activation_delay: Duration::from_millis(800),
                key_reload_interval: Duration::from_millis(200),
                ..OAuthConfig::new(None)
            },
            passkeys: PasskeyConfig {
                rp_id: "localhost".into(),
                rp_origins: "http://localhost:8080".into(),
                recovery_cooling_off: Duration::from_secs(72 * 3600),
            },
            signature: SignatureConfig::default(),
            // The harness makes hundreds of signed requests a minute per merchant, many at
            // once (as it raises the SMS limits, CONTRACT §9); tests/e2e/billing.rs turns the
            // plan limits on.
            billing: BillingConfig { rate_limits: false },
            identity,
            // This executable may not be a worker: the harness points it at one.
            untrusted: UntrustedConfig::with_worker(
                std::env::current_exe().unwrap_or_else(|_| PathBuf::from("idconsent")),
            ),
            handle_signals: false,
            worker_poll_interval: Duration::from_millis(100),
            clock: None,
            extra_gates: Vec::new(),
        }
    }
}

/// Whether `host:port` names a loopback host (`localhost`, `127.0.0.0/8`, `::1`).
fn is_loopback_bind(bind: &str) -> bool {
    let host = bind.rsplit_once(':').map_or(bind, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

pub(crate) fn normalise_base_url(url: String) -> Result<String, ConfigError> {
    let trimmed = url.trim_end_matches('/');
    let valid = (trimmed.starts_with("http://") || trimmed.starts_with("https://"))
        && !trimmed.contains(['?', '#', ' '])
        && trimmed
            .split("://")
            .nth(1)
            .is_some_and(|rest| !rest.is_empty());
    if valid {
        Ok(trimmed.to_owned())
    } else {
        Err(ConfigError::BaseUrl)
    }
}

/// Reads `data_dir/name`, creating it (mode 0600) with `generate()` the first time.
fn dev_secret(
    data_dir: &Path,
    name: &str,
    generate: impl FnOnce() -> String,
) -> Result<String, ConfigError> {
    let path = data_dir.join(name);
    let io_error = |source| ConfigError::DataDir {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(existing) => return Ok(existing.trim().to_owned()),
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(io_error(error)),
        Err(_) => {}
    }
    std::fs::create_dir_all(data_dir).map_err(io_error)?;
    let value = generate();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            file.write_all(value.as_bytes()).map_err(io_error)?;
            Ok(value)
        }
        // Another process created it first: use theirs.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::read_to_string(&path)
                .map(|existing| existing.trim().to_owned())
                .map_err(io_error)
        }
        Err(error) => Err(io_error(error)),
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let random: std::sync::Arc<dyn idconsent_kernel::RandomSource> =
        std::sync::Arc::new(idconsent_kernel::OsRandom);
    random.bytes::<N>()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
