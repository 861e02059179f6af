//! Signed API-key requests (CONTRACT §2.1).
//!
//! A signed request is checked in two steps so a stranger cannot make the server read a large
//! body: [`ApiAccess::identify`] checks the headers (key, timestamp) before the body is read,
//! [`ApiAccess::verify`] checks the signature over the raw body and records it against replay.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::{Clock, Environment, KeyedHash, SecretVault, Timestamp};

use idconsent_merchant::model::{Application, sealing};
use idconsent_merchant::ports::{ApplicationRepository, RepositoryError};
use idconsent_merchant::{API_KEY_HASH_PURPOSE, ApiKey};

use crate::ports::{ReplayGuard, RequestSignatures};

/// Why a signed request is refused: the six 401 messages of CONTRACT §2.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("Missing API key")]
    MissingApiKey,
    #[error("Missing signature")]
    MissingSignature,
    #[error("Invalid API key")]
    InvalidApiKey,
    #[error("Invalid signature")]
    InvalidSignature,
    #[error("Request timestamp outside allowed window")]
    StaleTimestamp,
    #[error("Replayed request")]
    Replayed,
}

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error(transparent)]
    Denied(#[from] Denied),
    #[error("Idempotency-Key must be 1 to 255 visible ASCII characters")]
    InvalidIdempotencyKey,
    #[error("access check failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<RepositoryError> for AccessError {
    fn from(error: RepositoryError) -> Self {
        AccessError::Unavailable(Box::new(error))
    }
}

/// The three authentication headers, as sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct SignedHeaders<'a> {
    pub api_key: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
}

/// The application behind a valid key, before the body is checked.
pub struct Identified {
    pub caller: Caller,
    api_key: String,
    timestamp: String,
    signature: String,
    timestamp_millis: i64,
    /// The secrets that verify: the current one, and the previous one for a day after a
    /// rotation.
    secrets: Vec<Vec<u8>>,
}

impl fmt::Debug for Identified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identified")
            .field("caller", &self.caller)
            .finish_non_exhaustive()
    }
}

/// Who signed a request: an application, in the environment of its key.
#[derive(Debug, Clone)]
pub struct Caller {
    pub application: Application,
    pub environment: Environment,
}

impl Caller {
    /// The idempotency and rate-limit scope: one application in one environment.
    pub fn scope(&self) -> String {
        format!("{}:{}", self.application.id, self.environment.as_str())
    }
}

/// Checks signed requests.
#[derive(Debug, Clone)]
pub struct ApiAccess {
    applications: Arc<dyn ApplicationRepository>,
    vault: Arc<dyn SecretVault>,
    hasher: Arc<dyn KeyedHash>,
    signatures: Arc<dyn RequestSignatures>,
    replay: Arc<dyn ReplayGuard>,
    clock: Arc<dyn Clock>,
    window: Duration,
}

impl ApiAccess {
    /// The accepted clock skew either side of the server's time.
    pub const WINDOW: Duration = Duration::from_secs(5 * 60);

    pub fn new(
        applications: Arc<dyn ApplicationRepository>,
        vault: Arc<dyn SecretVault>,
        hasher: Arc<dyn KeyedHash>,
        signatures: Arc<dyn RequestSignatures>,
        replay: Arc<dyn ReplayGuard>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            applications,
            vault,
            hasher,
            signatures,
            replay,
            clock,
            window: Self::WINDOW,
        }
    }

    /// Step one, from the headers alone: the key must be current and the timestamp recent.
    pub async fn identify(&self, headers: SignedHeaders<'_>) -> Result<Identified, AccessError> {
        let api_key = headers
            .api_key
            .filter(|k| !k.is_empty())
            .ok_or(Denied::MissingApiKey)?;
        let signature = headers
            .signature
            .filter(|s| !s.is_empty())
            .ok_or(Denied::MissingSignature)?;
        // A malformed key (wrong prefix, length or checksum) never reaches the database.
        let (key, _) = ApiKey::parse(api_key).map_err(|_| Denied::InvalidApiKey)?;
        let hash = self
            .hasher
            .hex(API_KEY_HASH_PURPOSE, key.as_str().as_bytes());
        let (application, environment) = self
            .applications
            .find_by_key_hash(&hash)
            .await?
            .ok_or(Denied::InvalidApiKey)?;
        let timestamp = headers.timestamp.unwrap_or_default();
        let timestamp_millis = parse_millis(timestamp).ok_or(Denied::StaleTimestamp)?;
        let now = self.clock.now().as_millis();
        let window = self.window.as_millis() as i64;
        if (now - timestamp_millis).abs() > window {
            return Err(Denied::StaleTimestamp.into());
        }
        let binding = sealing::request_secret(&application.id);
        let secrets = application
            .request_secrets(self.clock.now())
            .into_iter()
            .map(|sealed| self.vault.open(sealed, binding))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| AccessError::Unavailable(Box::new(error)))?;
        Ok(Identified {
            caller: Caller {
                application,
                environment,
            },
            api_key: api_key.to_owned(),
            timestamp: timestamp.to_owned(),
            signature: signature.to_owned(),
            timestamp_millis,
            secrets,
        })
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Forgets replay fingerprints whose timestamps can no longer pass the window check.
    pub async fn forget_expired(&self) -> Result<u64, AccessError> {
        Ok(self.replay.forget_expired(self.clock.now()).await?)
    }

    /// Step two: the signature over the exact body bytes, then first use of that signature.
    pub async fn verify(&self, identified: Identified, body: &[u8]) -> Result<Caller, AccessError> {
        let signed_with_a_current_secret = identified.secrets.iter().any(|secret| {
            self.signatures.verify(
                secret,
                &identified.api_key,
                &identified.timestamp,
                body,
                &identified.signature,
            )
        });
        if !signed_with_a_current_secret {
            return Err(Denied::InvalidSignature.into());
        }
        // Remember the signature until its timestamp can no longer pass the window check.
        let forget_after = Timestamp::from_millis(identified.timestamp_millis).plus(self.window);
        // The signed timestamp first (zero-padded, so text order is time order): stores keep
        // new fingerprints together instead of scattering them by the signature's randomness.
        let fingerprint = format!(
            "{:015}:{}",
            identified.timestamp_millis,
            identified.signature.to_ascii_lowercase()
        );
        if !self.replay.first_use(&fingerprint, forget_after).await? {
            return Err(Denied::Replayed.into());
        }
        Ok(identified.caller)
    }
}

/// Milliseconds since the epoch: digits only, at most 15 of them.
fn parse_millis(text: &str) -> Option<i64> {
    if text.is_empty() || text.len() > 15 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_plain_milliseconds() {
        assert_eq!(parse_millis("1763719200000"), Some(1_763_719_200_000));
        for bad in ["", "-1", "1.5", "1e12", " 1", "9999999999999999"] {
            assert_eq!(parse_millis(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_six_messages_are_exact() {
        let messages: Vec<String> = [
            Denied::MissingApiKey,
            Denied::MissingSignature,
            Denied::InvalidApiKey,
            Denied::InvalidSignature,
            Denied::StaleTimestamp,
            Denied::Replayed,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            messages,
            [
                "Missing API key",
                "Missing signature",
                "Invalid API key",
                "Invalid signature",
                "Request timestamp outside allowed window",
                "Replayed request"
            ]
        );
    }
}
