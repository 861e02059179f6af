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

    /// RFC 3161 time-stamping authority (HTTP) that stamps every certificate's signature
    /// (PAdES B-T); needs IDC_TSA_CERTS.
    #[arg(long, env = "IDC_TSA_URL", global = true)]
    pub tsa_url: Option<String>,

    /// PEM file with the authority's certificate or the certificates that issued it: tokens
    /// signed by anything else are refused.
    #[arg(long, env = "IDC_TSA_CERTS", global = true)]
    pub tsa_certs: Option<PathBuf>,

    /// The TSA policy OID to ask for and require in every token (optional).
    #[arg(long, env = "IDC_TSA_POLICY", global = true)]
    pub tsa_policy: Option<String>,

    /// `true` (default): without a time stamp a certificate waits (503, Retry-After) until the
    /// authority answers. `false`: it is signed without one, as the audit page says.
    #[arg(long, env = "IDC_TSA_REQUIRED", global = true, default_value_t = true, action = clap::ArgAction::Set)]
    pub tsa_required: bool,
}

/// The time-stamping authority (PAdES B-T).
#[derive(Debug, Clone)]
pub struct TsaConfig {
    pub url: String,
    pub certs: PathBuf,
    pub policy: Option<String>,
    pub required: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SignatureConfig {
    /// `None`: `{base_url}/sign`.
    pub sign_url: Option<String>,
    /// Certificate and key PEM files; `None`: a development pair in the data directory.
    pub signing_identity: Option<(PathBuf, PathBuf)>,
    /// `None`: certificates are PAdES B-B (no trusted time).
    pub tsa: Option<TsaConfig>,
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
        let tsa = match (self.tsa_url, self.tsa_certs) {
            (Some(url), Some(certs)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(ConfigError::Invalid {
                        variable: "IDC_TSA_URL",
                        reason: "must be an http(s) URL".into(),
                    });
                }
                Some(TsaConfig {
                    url,
                    certs,
                    policy: self.tsa_policy,
                    required: self.tsa_required,
                })
            }
            (None, None) => None,
            _ => {
                return Err(ConfigError::Invalid {
                    variable: "IDC_TSA_URL",
                    reason: "set IDC_TSA_URL and IDC_TSA_CERTS together".into(),
                });
            }
        };
        Ok(SignatureConfig {
            sign_url,
            signing_identity,
            tsa,
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
