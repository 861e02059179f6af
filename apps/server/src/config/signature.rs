//! Signature requests: where the hosted signing page lives.

use std::path::PathBuf;

use super::{ConfigError, normalise_base_url};

#[derive(Debug, Clone, clap::Args)]
pub struct SignatureArgs {
    /// The hosted signing page; a request's page is `<url>/<signatureRequestId>`
    /// (default: `<IDC_BASE_URL>/sign`).
    #[arg(long, env = "IDC_SIGN_URL", global = true)]
    pub sign_url: Option<String>,

    /// PEM certificate that signs certificate PDFs (with IDC_SIGNING_KEY; without them a
    /// self-signed one is made in the data directory).
    #[arg(long, env = "IDC_SIGNING_CERT", global = true)]
    pub signing_cert: Option<PathBuf>,

    /// PEM PKCS#8 private key (ECDSA P-256 or RSA) of IDC_SIGNING_CERT.
    #[arg(long, env = "IDC_SIGNING_KEY", global = true)]
    pub signing_key: Option<PathBuf>,
}

#[derive(Debug, Clone, Default)]
pub struct SignatureConfig {
    /// `None`: `{base_url}/sign`.
    pub sign_url: Option<String>,
    /// Certificate and key PEM files; `None`: a development pair in the data directory.
    pub signing_identity: Option<(PathBuf, PathBuf)>,
}

impl SignatureArgs {
    /// Production needs only the master key and the admin token (CONTRACT §9): without a
    /// configured pair it signs with a self-signed one made in the data directory, as dev does.
    pub fn resolve(self) -> Result<SignatureConfig, ConfigError> {
        let signing_identity = match (self.signing_cert, self.signing_key) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid {
                    variable: "IDC_SIGNING_CERT",
                    reason: "set IDC_SIGNING_CERT and IDC_SIGNING_KEY together".into(),
                });
            }
        };
        let sign_url = match self.sign_url {
            Some(url) => Some(normalise_base_url(url).map_err(|_| ConfigError::Invalid {
                variable: "IDC_SIGN_URL",
                reason: "must be an http(s) URL".into(),
            })?),
            None => None,
        };
        Ok(SignatureConfig {
            sign_url,
            signing_identity,
        })
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
