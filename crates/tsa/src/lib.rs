//! Trusted time for signatures: [`HttpTimestampAuthority`] asks an RFC 3161 time-stamping
//! authority over HTTP for a token over a digest, and returns it only once the token proves
//! it answers that request (imprint and nonce) and is signed by an authority the operator
//! trusts (`IDC_TSA_CERTS`). It implements the signature domain's [`TimestampAuthority`] port;
//! `idconsent-pdf-sign` embeds the token as the signature's `signatureTimeStampToken`
//! (PAdES B-T).

mod asn1;
mod token;

#[cfg(feature = "test-tsa")]
pub mod testing;

use std::time::Duration;

use async_trait::async_trait;
use der::asn1::{ObjectIdentifier, OctetString, Uint};
use der::{Decode, Encode};
use idconsent_signature::{TimestampAuthority, TimestampError};
use ring::rand::{SecureRandom, SystemRandom};
use spki::AlgorithmIdentifierOwned;
use x509_cert::Certificate;

use crate::asn1::{MessageImprint, SHA256, TimeStampReq, TimeStampResp, TspVersion};
use crate::token::{Expected, check_token};

/// A token with its authority's certificates is a few KiB; anything much larger is not one.
const MAX_RESPONSE_BYTES: usize = 64 * 1024;

/// How to reach and trust one authority.
#[derive(Debug, Clone)]
pub struct TsaSettings {
    pub url: String,
    /// The authority's certificate, or the certificates that issued it (one of them must be
    /// the signer or its issuer).
    pub trusted: Vec<Certificate>,
    /// The TSA policy to ask for (and require in the token), when the operator names one.
    pub policy: Option<ObjectIdentifier>,
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum TsaConfigError {
    #[error("the TSA certificates: {0}")]
    Certificates(String),
    #[error("the TSA policy OID {0:?} is not an OID")]
    Policy(String),
    #[error("the HTTP client: {0}")]
    Client(String),
}

impl TsaSettings {
    /// Settings from the operator's values: the PEM bundle of the TSA's certificates and an
    /// optional policy OID in dotted form.
    pub fn from_pem(url: &str, pem: &[u8], policy: Option<&str>) -> Result<Self, TsaConfigError> {
        let trusted = Certificate::load_pem_chain(pem)
            .map_err(|error| TsaConfigError::Certificates(error.to_string()))?;
        if trusted.is_empty() {
            return Err(TsaConfigError::Certificates(
                "no certificate in the file".into(),
            ));
        }
        let policy = policy
            .map(|oid| {
                ObjectIdentifier::new(oid).map_err(|_| TsaConfigError::Policy(oid.to_owned()))
            })
            .transpose()?;
        Ok(Self {
            url: url.to_owned(),
            trusted,
            policy,
            timeout: Duration::from_secs(10),
        })
    }
}

/// RFC 3161 over HTTP (`application/timestamp-query`).
#[derive(Debug)]
pub struct HttpTimestampAuthority {
    settings: TsaSettings,
    client: reqwest::Client,
    random: SystemRandom,
}

impl HttpTimestampAuthority {
    pub fn new(settings: TsaSettings) -> Result<Self, TsaConfigError> {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| TsaConfigError::Client(error.to_string()))?;
        Ok(Self {
            settings,
            client,
            random: SystemRandom::new(),
        })
    }

    fn nonce(&self) -> Result<Uint, TimestampError> {
        let mut bytes = [0u8; 8];
        self.random
            .fill(&mut bytes)
            .map_err(|_| TimestampError::Unavailable("no randomness for the nonce".into()))?;
        Uint::new(&bytes).map_err(|error| TimestampError::Unavailable(error.to_string()))
    }

    async fn post(&self, query: Vec<u8>) -> Result<Vec<u8>, TimestampError> {
        let unavailable = |error: reqwest::Error| TimestampError::Unavailable(error.to_string());
        let mut response = self
            .client
            .post(&self.settings.url)
            .header("content-type", "application/timestamp-query")
            .body(query)
            .send()
            .await
            .map_err(unavailable)?;
        if !response.status().is_success() {
            return Err(TimestampError::Unavailable(format!(
                "the authority answered HTTP {}",
                response.status()
            )));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unavailable)? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(TimestampError::Refused(format!(
                    "the answer exceeds {MAX_RESPONSE_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

#[async_trait]
impl TimestampAuthority for HttpTimestampAuthority {
    async fn timestamp(&self, digest: &[u8; 32]) -> Result<Vec<u8>, TimestampError> {
        let nonce = self.nonce()?;
        let encode = |error: der::Error| TimestampError::Unavailable(error.to_string());
        let request = TimeStampReq {
            version: TspVersion::V1,
            message_imprint: MessageImprint {
                hash_algorithm: AlgorithmIdentifierOwned {
                    oid: SHA256,
                    parameters: None,
                },
                hashed_message: OctetString::new(digest.to_vec()).map_err(encode)?,
            },
            req_policy: self.settings.policy,
            nonce: Some(nonce.clone()),
            // The token carries the TSA's certificate: validators find it there (B-T).
            cert_req: true,
            extensions: None,
        };
        let body = self.post(request.to_der().map_err(encode)?).await?;
        let response = TimeStampResp::from_der(&body)
            .map_err(|error| TimestampError::Refused(format!("not a TimeStampResp: {error}")))?;
        let status = response.status.status.as_bytes();
        // 0 granted, 1 granted with modifications; a single byte either way.
        if !matches!(status, [] | [0] | [1]) {
            return Err(TimestampError::Unavailable(format!(
                "the authority refused the request (status {status:?})"
            )));
        }
        let token = response
            .time_stamp_token
            .ok_or_else(|| TimestampError::Refused("granted without a token".into()))?
            .to_der()
            .map_err(encode)?;
        let expected = Expected {
            digest,
            nonce: &nonce,
            policy: self.settings.policy.as_ref(),
        };
        check_token(&token, &expected, &self.settings.trusted).map_err(TimestampError::Refused)?;
        Ok(token)
    }
}
