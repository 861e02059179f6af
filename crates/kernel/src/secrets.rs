//! Secrets at rest as ports: the system adapter is `idconsent-vault-ring` (AES-256-GCM and
//! HMAC-SHA256 under keys derived from `IDC_MASTER_KEY`).

use std::fmt;

/// Ciphertext of a secret, opaque to domain code (the adapter chooses the encoding).
#[derive(Clone, PartialEq, Eq)]
pub struct Sealed(String);

impl Sealed {
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Sealed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealed(…)")
    }
}

/// Encrypts secrets that must be read back (API secrets, webhook secrets).
///
/// Contract: `open(seal(x)) == x`; two seals of one plaintext differ; a sealed value that was
/// altered, or sealed under another key, fails to open.
pub trait SecretVault: Send + Sync + fmt::Debug {
    fn seal(&self, plaintext: &[u8]) -> Sealed;
    fn open(&self, sealed: &Sealed) -> Result<Vec<u8>, VaultError>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the sealed value cannot be opened with this key")]
pub struct VaultError;

/// A keyed one-way hash for values looked up but never read back (API keys, one-time codes,
/// refresh tokens): a stolen database does not let anyone confirm a guess offline.
///
/// Contract: deterministic for one key and `purpose`; different purposes give unrelated hashes.
pub trait KeyedHash: Send + Sync + fmt::Debug {
    fn hash(&self, purpose: &str, value: &[u8]) -> [u8; 32];
}

impl dyn KeyedHash + '_ {
    /// The hash as lowercase hex, the form stored in the database.
    pub fn hex(&self, purpose: &str, value: &[u8]) -> String {
        self.hash(purpose, value)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}
