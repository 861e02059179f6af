//! Configuration: clap flags mirroring `IDC_*` environment variables, resolved and checked once
//! at start into a [`Config`]. Nothing else in the workspace reads the environment.

use std::convert::Infallible;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_store_diesel::DbOptions;
use idconsent_webhook::RetrySchedule;
use secrecy::{ExposeSecret, SecretString};

/// `dev` gives a working server with no setup (dev mailbox, generated keys); `production`
/// requires real secrets and never exposes development routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Dev,
    Production,
}

/// Which corporate registry checks business registrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RegistryKind {
    /// A test registry: every number matches except `000000000`.
    Sandbox,
    /// A provider over HTTP (`IDC_REGISTRY_URL`).
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Readable lines for a terminal.
    Human,
    /// One JSON object per line, for log shippers.
    Json,
}

fn secret(text: &str) -> Result<SecretString, Infallible> {
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

    /// SMTP server for email, e.g. `smtps://user:pass@smtp.example.com:465`.
    #[arg(long, env = "IDC_SMTP_URL", value_parser = secret, hide_env_values = true, global = true)]
    pub smtp_url: Option<SecretString>,

    /// Sender of every email.
    #[arg(
        long,
        env = "IDC_SMTP_FROM",
        default_value = "idconsent <no-reply@idconsent.localhost>",
        global = true
    )]
    pub smtp_from: String,

    /// Base URL of the merchant dashboard, used in emailed links (default: the base URL).
    #[arg(long, env = "IDC_DASHBOARD_URL", global = true)]
    pub dashboard_url: Option<String>,

    /// Allow callback URLs on private, loopback and link-local hosts (default: true in dev,
    /// false in production).
    #[arg(long, env = "IDC_ALLOW_PRIVATE_CALLBACKS", global = true)]
    pub allow_private_callbacks: Option<bool>,

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

    /// How long a consent session waits for a decision, in seconds.
    #[arg(
        long,
        env = "IDC_CONSENT_TTL_SECONDS",
        default_value_t = 300,
        global = true
    )]
    pub consent_ttl_seconds: u64,

    /// Waits between webhook attempts, e.g. `5s,5m,30m,2h,5h,10h,10h` (the default).
    #[arg(long, env = "IDC_WEBHOOK_RETRY_SCHEDULE", global = true)]
    pub webhook_retry_schedule: Option<String>,

    /// The mobile app's URI scheme: QR codes encode `<scheme>://auth/<sessionId>`.
    #[arg(
        long,
        env = "IDC_APP_SCHEME",
        default_value = "idconsent",
        global = true
    )]
    pub app_scheme: String,

    /// Directory of the ES256 keys that sign OAuth access tokens. Dev: `<data dir>/oauth-keys`,
    /// created with a first key. Production: required, and must hold a key
    /// (`idconsent admin oauth rotate-key` creates one).
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

    /// WebAuthn relying-party ID: the domain passkeys are bound to.
    #[arg(long, env = "IDC_RP_ID", default_value = "localhost", global = true)]
    pub rp_id: String,

    /// Comma-separated origins the app's WebAuthn calls may come from.
    #[arg(
        long,
        env = "IDC_RP_ORIGINS",
        default_value = "http://localhost:8080",
        global = true
    )]
    pub rp_origins: String,

    /// HTTP SMS gateway endpoint (receives `POST {"to", "body"}`).
    #[arg(long, env = "IDC_SMS_GATEWAY_URL", global = true)]
    pub sms_gateway_url: Option<String>,

    /// One header sent to the SMS gateway, e.g. `Authorization: Bearer abc`.
    #[arg(long, env = "IDC_SMS_GATEWAY_AUTH_HEADER", value_parser = secret, hide_env_values = true, global = true)]
    pub sms_gateway_auth_header: Option<SecretString>,
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

/// SMTP settings for the email transport.
#[derive(Debug, Clone)]
pub struct SmtpSettings {
    pub url: SecretString,
    pub from: String,
}

/// SMS gateway settings.
#[derive(Debug, Clone)]
pub struct SmsSettings {
    pub url: String,
    pub auth_header: Option<SecretString>,
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
    pub smtp: Option<SmtpSettings>,
    pub sms: Option<SmsSettings>,
    /// Base URL of emailed dashboard links, without a trailing slash.
    pub dashboard_url: String,
    pub allow_private_callbacks: bool,
    pub registry: RegistrySettings,
    pub consent_ttl: Duration,
    pub webhook_retry: RetrySchedule,
    pub app_scheme: String,
    pub rp_id: String,
    pub oauth_keys_dir: PathBuf,
    pub oauth_code_ttl: Duration,
    /// Comma-separated, as configured.
    pub rp_origins: String,
    /// Whether the server stops on SIGTERM/SIGINT itself (the binary); embedded servers in
    /// tests are stopped through their handle instead.
    pub handle_signals: bool,
    /// How often background workers poll when nothing woke them.
    pub worker_poll_interval: Duration,
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
        let dashboard_url = match self.dashboard_url {
            Some(url) => normalise_base_url(url).map_err(|_| ConfigError::DashboardUrl)?,
            None => base_url.clone(),
        };
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
        let webhook_retry = match &self.webhook_retry_schedule {
            Some(text) => RetrySchedule::parse(text)?,
            None => RetrySchedule::default(),
        };
        let registry = match self.registry {
            RegistryKind::Sandbox => RegistrySettings::Sandbox,
            RegistryKind::Http => RegistrySettings::Http {
                url: self.registry_url.ok_or(ConfigError::RegistryUrl)?,
                auth_header: self.registry_auth_header,
            },
        };
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
        let oauth_keys_dir = match self.oauth_keys_dir {
            Some(dir) => dir,
            None if production => {
                return Err(ConfigError::RequiredInProduction("IDC_OAUTH_KEYS_DIR"));
            }
            None => self.data_dir.join("oauth-keys"),
        };
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
            smtp: self.smtp_url.map(|url| SmtpSettings {
                url,
                from: self.smtp_from,
            }),
            sms: self.sms_gateway_url.map(|url| SmsSettings {
                url,
                auth_header: self.sms_gateway_auth_header,
            }),
            dashboard_url,
            allow_private_callbacks: self.allow_private_callbacks.unwrap_or(!production),
            registry,
            consent_ttl: Duration::from_secs(self.consent_ttl_seconds),
            webhook_retry,
            app_scheme: self.app_scheme,
            rp_id: self.rp_id,
            oauth_keys_dir,
            oauth_code_ttl: Duration::from_secs(self.oauth_code_ttl_seconds.clamp(1, 3600)),
            rp_origins: self.rp_origins,
            handle_signals: true,
            worker_poll_interval: Duration::from_secs(1),
        })
    }
}

impl Config {
    /// A dev-mode configuration on the given database, for embedding the server in tests:
    /// random port, fixed keys, no signal handling.
    pub fn for_tests(data_dir: PathBuf, database_url: String) -> Self {
        let oauth_keys_dir = data_dir.join("oauth-keys");
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
            smtp: None,
            sms: None,
            dashboard_url: "http://dashboard.test".into(),
            allow_private_callbacks: true,
            registry: RegistrySettings::Sandbox,
            consent_ttl: Duration::from_secs(300),
            webhook_retry: RetrySchedule::parse("200ms,200ms,200ms,200ms").unwrap_or_default(),
            app_scheme: "idconsent".into(),
            rp_id: "localhost".into(),
            oauth_keys_dir,
            oauth_code_ttl: Duration::from_secs(600),
            rp_origins: "http://localhost:8080".into(),
            handle_signals: false,
            worker_poll_interval: Duration::from_millis(100),
        }
    }
}

fn normalise_base_url(url: String) -> Result<String, ConfigError> {
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
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        settings: Settings,
    }

    fn settings(args: &[&str]) -> Settings {
        let mut argv = vec!["idconsent"];
        argv.extend_from_slice(args);
        Wrapper::parse_from(argv).settings
    }

    #[test]
    fn dev_mode_generates_and_then_reuses_keys() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_str().unwrap();
        let first = settings(&["--data-dir", data_dir, "--mode", "dev"])
            .resolve()
            .unwrap();
        let second = settings(&["--data-dir", data_dir, "--mode", "dev"])
            .resolve()
            .unwrap();
        assert_eq!(first.master_key, second.master_key);
        assert_eq!(
            first.admin_token.expose_secret(),
            second.admin_token.expose_secret()
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("master.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn production_requires_real_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_str().unwrap();
        let error = settings(&["--data-dir", data_dir, "--mode", "production"])
            .resolve()
            .unwrap_err();
        assert!(error.to_string().contains("IDC_MASTER_KEY"));
        let key = BASE64.encode([1u8; 32]);
        let error = settings(&[
            "--data-dir",
            data_dir,
            "--mode",
            "production",
            "--master-key",
            &key,
        ])
        .resolve()
        .unwrap_err();
        assert!(error.to_string().contains("IDC_ADMIN_TOKEN"));
        let token = "t".repeat(40);
        let production = [
            "--data-dir",
            data_dir,
            "--mode",
            "production",
            "--master-key",
            &key,
            "--admin-token",
            &token,
        ];
        let error = settings(&production).resolve().unwrap_err();
        assert!(error.to_string().contains("IDC_OAUTH_KEYS_DIR"));
        let keys = dir.path().join("keys");
        let mut with_keys = production.to_vec();
        with_keys.extend(["--oauth-keys-dir", keys.to_str().unwrap()]);
        let config = settings(&with_keys).resolve().unwrap();
        assert_eq!(config.mode, Mode::Production);
        assert!(!dir.path().join("master.key").exists());
    }

    #[test]
    fn bad_values_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_str().unwrap();
        let short_key = BASE64.encode([1u8; 16]);
        assert!(matches!(
            settings(&["--data-dir", data_dir, "--master-key", &short_key]).resolve(),
            Err(ConfigError::MasterKeyFormat)
        ));
        assert!(matches!(
            settings(&["--data-dir", data_dir, "--admin-token", "short"]).resolve(),
            Err(ConfigError::AdminTokenTooShort)
        ));
        assert!(matches!(
            settings(&["--data-dir", data_dir, "--base-url", "ftp://x"]).resolve(),
            Err(ConfigError::BaseUrl)
        ));
    }

    #[test]
    fn debug_output_hides_secrets() {
        let config = Config::for_tests(PathBuf::from("data"), "postgres://u:pw@h/db".into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("pw@"), "{shown}");
        assert!(!shown.contains("test-admin-token"), "{shown}");
    }

    #[test]
    fn base_url_loses_its_trailing_slash() {
        assert_eq!(
            normalise_base_url("https://id.example/".into()).unwrap(),
            "https://id.example"
        );
        assert!(normalise_base_url("https://".into()).is_err());
    }
}
