//! Signature requests: where the hosted signing page lives.

use super::{ConfigError, normalise_base_url};

#[derive(Debug, Clone, clap::Args)]
pub struct SignatureArgs {
    /// The hosted signing page; a request's page is `<url>/<signatureRequestId>`
    /// (default: `<IDC_BASE_URL>/sign`).
    #[arg(long, env = "IDC_SIGN_URL", global = true)]
    pub sign_url: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SignatureConfig {
    /// `None`: `{base_url}/sign`.
    pub sign_url: Option<String>,
}

impl SignatureArgs {
    pub fn resolve(self) -> Result<SignatureConfig, ConfigError> {
        let sign_url = match self.sign_url {
            Some(url) => Some(normalise_base_url(url).map_err(|_| ConfigError::Invalid {
                variable: "IDC_SIGN_URL",
                reason: "must be an http(s) URL".into(),
            })?),
            None => None,
        };
        Ok(SignatureConfig { sign_url })
    }
}

impl SignatureConfig {
    /// The signing page's base for a deployment at `base_url`.
    pub fn sign_url(&self, base_url: &str) -> String {
        self.sign_url
            .clone()
            .unwrap_or_else(|| format!("{base_url}/sign"))
    }
}
