//! Identity verification: where the analysis engines and their models are.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often each process sweeps identity images nothing names (docs/security.md): they are
/// only deleted once older than the analysis lease anyway, so a minute is prompt enough.
pub const IMAGE_SWEEP_INTERVAL: Duration = Duration::from_secs(60);

use super::ConfigError;

#[derive(Debug, Clone, clap::Args)]
pub struct IdentityArgs {
    /// The directory holding the analysis models (`mrz.traineddata`, put there by
    /// `scripts/setup-identity.sh`); default `{IDC_DATA_DIR}/models`. Without them the
    /// service runs and reports those checks `inconclusive` with the reason.
    #[arg(long, env = "IDC_IDENTITY_MODELS_DIR", global = true)]
    pub identity_models_dir: Option<PathBuf>,
    /// The Tesseract OCR executable (Debian's `tesseract-ocr`).
    #[arg(
        long,
        env = "IDC_TESSERACT",
        global = true,
        default_value = "tesseract"
    )]
    pub tesseract: PathBuf,
    /// Analyses run at once in this process (each takes about one core while it runs); `0`
    /// runs none here (an API-only process; another process analyses).
    #[arg(long, env = "IDC_IDENTITY_WORKERS", global = true, default_value_t = 1)]
    pub identity_workers: u32,
    /// Verifications one application may submit with sandbox keys per UTC day (then 429 with
    /// `Retry-After` until midnight UTC): sandbox analyses are never billed but cost CPU.
    #[arg(
        long,
        env = "IDC_SANDBOX_VERIFICATIONS_PER_DAY",
        global = true,
        default_value_t = idconsent_verification::DEFAULT_SANDBOX_DAILY_CAP
    )]
    pub sandbox_verifications_per_day: u32,
    /// The directory of trusted CSCA certificates (PEM or DER: `.pem`, `.crt`, `.cer`, `.der`),
    /// CMS-signed CSCA master lists (`.ml`) and CRLs (`.crl`), read at start. Unset: no CSCA is
    /// trusted and chip evidence is reported `not_checked`.
    #[arg(long, env = "IDC_CSCA_DIR", global = true)]
    pub csca_dir: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct IdentityConfig {
    pub models_dir: PathBuf,
    pub tesseract: PathBuf,
    pub workers: u32,
    /// Between two sweeps of orphaned identity images in this process.
    pub image_sweep_interval: Duration,
    pub sandbox_daily_cap: u32,
    /// `IDC_CSCA_DIR`: the chip verifier's trust store; `None` trusts nothing.
    pub csca_dir: Option<PathBuf>,
}

impl IdentityConfig {
    /// The defaults for a data directory (tests, embedders).
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self {
            models_dir: data_dir.join("models"),
            tesseract: PathBuf::from("tesseract"),
            workers: 1,
            image_sweep_interval: IMAGE_SWEEP_INTERVAL,
            sandbox_daily_cap: idconsent_verification::DEFAULT_SANDBOX_DAILY_CAP,
            csca_dir: None,
        }
    }
}

impl IdentityArgs {
    pub fn resolve(self, data_dir: &Path) -> Result<IdentityConfig, ConfigError> {
        if self.sandbox_verifications_per_day == 0 {
            return Err(ConfigError::Invalid {
                variable: "IDC_SANDBOX_VERIFICATIONS_PER_DAY",
                reason: "must be at least 1".into(),
            });
        }
        if let Some(dir) = &self.csca_dir
            && !dir.is_dir()
        {
            return Err(ConfigError::Invalid {
                variable: "IDC_CSCA_DIR",
                reason: format!("{} is not a directory", dir.display()),
            });
        }
        Ok(IdentityConfig {
            models_dir: self
                .identity_models_dir
                .unwrap_or_else(|| data_dir.join("models")),
            tesseract: self.tesseract,
            workers: self.identity_workers.min(64),
            image_sweep_interval: IMAGE_SWEEP_INTERVAL,
            sandbox_daily_cap: self.sandbox_verifications_per_day,
            csca_dir: self.csca_dir,
        })
    }
}
