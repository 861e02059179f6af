//! Binary objects (uploaded documents, generated PDFs) as a port.

use std::fmt;

use async_trait::async_trait;

/// Stores opaque bytes under a key.
///
/// Contract: `put` then `get` returns the same bytes; `put` on an existing key replaces it;
/// `get` of an unknown key is `Ok(None)`; keys are `[A-Za-z0-9_./-]`, without `..`, at most
/// 200 characters (anything else is `InvalidKey`).
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError>;
}

#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("invalid blob key")]
    InvalidKey,
    #[error("blob storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Whether `key` is acceptable to every `BlobStore`.
pub fn is_valid_key(key: &str) -> bool {
    (1..=200).contains(&key.len())
        && !key.contains("..")
        && !key.starts_with('/')
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_escape() {
        assert!(is_valid_key("merchants/mer_01/doc_01.pdf"));
        for bad in ["", "/etc/passwd", "a/../b", "a b", "a\\b", &"x".repeat(201)] {
            assert!(!is_valid_key(bad), "{bad}");
        }
    }
}
