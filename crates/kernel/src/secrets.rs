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

/// What a sealed value belongs to: a kind of secret (`application.request-secret`) and the id
/// of its owner (`app_…`). The vault binds both into the ciphertext, so a value copied into
/// another row — another application's secret column, another grant — fails to open there.
///
/// The kind is logical rather than a column name: a rotation moves the current secret into the
/// "previous" column, and it must still open there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedFor<'a> {
    pub kind: &'a str,
    pub owner: &'a str,
}

impl<'a> SealedFor<'a> {
    pub const fn new(kind: &'a str, owner: &'a str) -> Self {
        Self { kind, owner }
    }
}

/// Encrypts secrets that must be read back (API secrets, webhook secrets).
///
/// Contract: `open(seal(x, b), b) == x`; two seals of one plaintext differ; a sealed value that
/// was altered, sealed under another key or opened for another binding fails to open.
/// `reseal` turns a value sealed in an older format (before bindings existed) into one bound to
/// `binding` and returns `None` for a value that is already current; it fails like `open`.
pub trait SecretVault: Send + Sync + fmt::Debug {
    fn seal(&self, plaintext: &[u8], binding: SealedFor<'_>) -> Sealed;
    fn open(&self, sealed: &Sealed, binding: SealedFor<'_>) -> Result<Vec<u8>, VaultError>;
    fn reseal(&self, sealed: &Sealed, binding: SealedFor<'_>)
    -> Result<Option<Sealed>, VaultError>;
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
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(64);
        for byte in self.hash(purpose, value) {
            hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
        }
        hex
    }
}

/// Whether `a` and `b` are equal, in a time that depends only on their lengths: for comparing a
/// presented secret (or its hash) with the stored one.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed;

    impl KeyedHash for Fixed {
        fn hash(&self, _: &str, _: &[u8]) -> [u8; 32] {
            let mut hash = [0u8; 32];
            hash[0] = 0x0f;
            hash[31] = 0xa5;
            hash
        }
    }

    #[test]
    fn hashes_are_lowercase_hex_two_digits_a_byte() {
        let hasher: &dyn KeyedHash = &Fixed;
        assert_eq!(hasher.hex("any", b""), format!("0f{}a5", "00".repeat(30)));
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"ab", b"abc"));
    }
}
