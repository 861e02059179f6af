//! Credential formats.
//!
//! - API keys: `mk_test_` / `mk_live_`, then 30 base62 characters of randomness (178 bits), then
//!   a 6-character base62 CRC32 checksum of everything before it — the GitHub token layout, so
//!   secret scanners can recognise a key and reject look-alikes without a database lookup.
//! - API secrets: `sk_` + 64 lowercase hex characters (256 bits), the HMAC key for signed requests.
//! - Webhook secrets: `whsec_` + standard base64 of 32 random bytes (Standard Webhooks).

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::{Environment, RandomSource};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_CHARS: usize = 30;
const CHECKSUM_CHARS: usize = 6;

/// An API key. Not secret on its own (the HMAC secret is), but still never logged in full.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ApiKey(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed API key")]
pub struct MalformedApiKey;

impl ApiKey {
    pub fn prefix(environment: Environment) -> &'static str {
        match environment {
            Environment::Sandbox => "mk_test_",
            Environment::Live => "mk_live_",
        }
    }

    pub fn generate(environment: Environment, random: &dyn RandomSource) -> Self {
        let mut key = String::with_capacity(8 + RANDOM_CHARS + CHECKSUM_CHARS);
        key.push_str(Self::prefix(environment));
        for _ in 0..RANDOM_CHARS {
            key.push(char::from(BASE62[random.below(62) as usize]));
        }
        let checksum = checksum(&key);
        key.push_str(&checksum);
        Self(key)
    }

    /// The environment the key's prefix names.
    pub fn environment(&self) -> Environment {
        if self.0.starts_with(Self::prefix(Environment::Live)) {
            Environment::Live
        } else {
            Environment::Sandbox
        }
    }

    /// Checks prefix, length, alphabet and checksum; returns the key and its environment.
    pub fn parse(text: &str) -> Result<(Self, Environment), MalformedApiKey> {
        let environment = Environment::ALL
            .into_iter()
            .find(|env| text.starts_with(Self::prefix(*env)))
            .ok_or(MalformedApiKey)?;
        let body = &text[8..];
        if body.len() != RANDOM_CHARS + CHECKSUM_CHARS
            || !body.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(MalformedApiKey);
        }
        let (signed, sum) = text.split_at(text.len() - CHECKSUM_CHARS);
        if checksum(signed) != sum {
            return Err(MalformedApiKey);
        }
        Ok((Self(text.to_owned()), environment))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `mk_test_…a1B2c3`: enough to recognise a key in a dashboard or a log line.
    pub fn masked(&self) -> String {
        format!("{}…{}", &self.0[..8], &self.0[self.0.len() - 6..])
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey({})", self.masked())
    }
}

fn checksum(text: &str) -> String {
    let mut value = crc32fast::hash(text.as_bytes());
    let mut digits = [b'0'; CHECKSUM_CHARS];
    for digit in digits.iter_mut().rev() {
        *digit = BASE62[(value % 62) as usize];
        value /= 62;
    }
    digits.iter().map(|b| char::from(*b)).collect()
}

/// A new API secret: `sk_` + 64 hex characters.
pub fn generate_secret(random: &dyn RandomSource) -> String {
    format!("sk_{}", random.hex(32))
}

/// A new webhook secret: `whsec_` + base64 of 32 random bytes.
pub fn generate_webhook_secret(random: &dyn RandomSource) -> String {
    format!("whsec_{}", BASE64.encode(random.bytes::<32>()))
}

/// A URL-safe single-use token for links (email verification, invitations): 32 random bytes.
pub fn generate_link_token(random: &dyn RandomSource) -> String {
    random.hex(32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use idconsent_kernel::{OsRandom, SeededRandom};
    use std::sync::Arc;

    #[test]
    fn keys_carry_their_environment_and_a_valid_checksum() {
        let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
        for environment in Environment::ALL {
            let key = ApiKey::generate(environment, random.as_ref());
            assert!(key.as_str().starts_with(ApiKey::prefix(environment)));
            assert_eq!(key.as_str().len(), 8 + 30 + 6);
            assert_eq!(ApiKey::parse(key.as_str()), Ok((key.clone(), environment)));
        }
    }

    #[test]
    fn a_changed_character_breaks_the_checksum() {
        let random: Arc<dyn RandomSource> = Arc::new(SeededRandom::new(5));
        let key = ApiKey::generate(Environment::Sandbox, random.as_ref());
        let mut tampered = key.as_str().to_owned().into_bytes();
        tampered[12] = if tampered[12] == b'a' { b'b' } else { b'a' };
        assert_eq!(
            ApiKey::parse(std::str::from_utf8(&tampered).unwrap()),
            Err(MalformedApiKey)
        );
        assert_eq!(
            ApiKey::parse("mk_test_4f9c2a7e1b3d5f60a8c9e2b4d6f8a0c1"),
            Err(MalformedApiKey)
        );
        assert_eq!(ApiKey::parse("sk_test_x"), Err(MalformedApiKey));
    }

    #[test]
    fn debug_shows_only_a_masked_key() {
        let random: Arc<dyn RandomSource> = Arc::new(SeededRandom::new(6));
        let key = ApiKey::generate(Environment::Live, random.as_ref());
        let shown = format!("{key:?}");
        assert!(!shown.contains(&key.as_str()[8..30]));
        assert!(shown.starts_with("ApiKey(mk_live_…"));
    }

    #[test]
    fn secrets_have_the_contract_formats() {
        let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
        let secret = generate_secret(random.as_ref());
        assert!(secret.starts_with("sk_") && secret.len() == 67);
        let webhook = generate_webhook_secret(random.as_ref());
        let decoded = BASE64
            .decode(webhook.strip_prefix("whsec_").unwrap())
            .unwrap();
        assert_eq!(decoded.len(), 32);
    }
}
