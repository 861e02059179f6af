//! Binary objects (uploaded documents, generated PDFs) as a port.

use std::fmt;

use async_trait::async_trait;

/// Stores opaque bytes under a key.
///
/// Contract: `put` then `get` returns the same bytes; `put` on an existing key replaces it;
/// `get` of an unknown key is `Ok(None)`; `delete` removes the object (a later `get` is
/// `Ok(None)`) and succeeds for an unknown key too; keys are `[A-Za-z0-9_./-]`, without `..`,
/// at most 200 characters (anything else is `InvalidKey`).
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError>;
    async fn delete(&self, key: &str) -> Result<(), BlobError>;
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

/// The [`BlobStore`] contract: every adapter runs these cases through
/// `blob_store_contract!(make)`, `make` being an `async fn() -> Option<(Arc<dyn BlobStore>, G)>`
/// giving an empty store (and a guard that keeps its backing resources alive).
#[cfg(feature = "contract")]
pub mod contract {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use super::{BlobError, BlobStore};

    #[macro_export]
    macro_rules! blob_store_contract {
        ($make:path) => {
            $crate::blob_store_contract!(@cases $make;
                what_is_put_comes_back_and_a_put_replaces,
                unknown_keys_are_none,
                keys_that_could_escape_are_refused,
                large_objects_round_trip,
                concurrent_puts_leave_one_whole_object,
                a_deleted_object_is_gone_and_deleting_twice_is_fine,
            );
        };
        (@cases $make:path; $($case:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let Some((store, _guard)) = $make().await else { return };
                    $crate::blob::contract::$case(store).await;
                }
            )*
        };
    }

    fn unique(prefix: &str) -> String {
        let random: Arc<dyn crate::RandomSource> = Arc::new(crate::OsRandom);
        format!("{prefix}/{}", random.hex(8))
    }

    pub async fn what_is_put_comes_back_and_a_put_replaces(store: Arc<dyn BlobStore>) {
        let key = format!("{}/doc.pdf", unique("merchants"));
        store.put(&key, b"%PDF-1".to_vec()).await.unwrap();
        assert_eq!(store.get(&key).await.unwrap().unwrap(), b"%PDF-1");
        store.put(&key, b"%PDF-2".to_vec()).await.unwrap();
        assert_eq!(store.get(&key).await.unwrap().unwrap(), b"%PDF-2");
        let empty = unique("empty");
        store.put(&empty, Vec::new()).await.unwrap();
        assert_eq!(store.get(&empty).await.unwrap().unwrap(), b"");
    }

    pub async fn a_deleted_object_is_gone_and_deleting_twice_is_fine(store: Arc<dyn BlobStore>) {
        let key = format!("{}/selfie.jpg", unique("identity"));
        let kept = format!("{}/front.jpg", unique("identity"));
        store.put(&key, b"face".to_vec()).await.unwrap();
        store.put(&kept, b"page".to_vec()).await.unwrap();
        store.delete(&key).await.unwrap();
        assert!(store.get(&key).await.unwrap().is_none());
        assert_eq!(store.get(&kept).await.unwrap().unwrap(), b"page");
        store.delete(&key).await.unwrap();
        assert!(matches!(
            store.delete("a/../b").await,
            Err(BlobError::InvalidKey)
        ));
    }

    pub async fn unknown_keys_are_none(store: Arc<dyn BlobStore>) {
        assert!(store.get(&unique("nothing")).await.unwrap().is_none());
    }

    pub async fn keys_that_could_escape_are_refused(store: Arc<dyn BlobStore>) {
        for bad in ["", "/etc/passwd", "a/../b", "a b", "a\\\\b"] {
            assert!(
                matches!(
                    store.put(bad, b"x".to_vec()).await,
                    Err(BlobError::InvalidKey)
                ),
                "{bad}"
            );
            assert!(
                matches!(store.get(bad).await, Err(BlobError::InvalidKey)),
                "{bad}"
            );
        }
    }

    pub async fn large_objects_round_trip(store: Arc<dyn BlobStore>) {
        let key = unique("large");
        let bytes: Vec<u8> = (0..20 * 1024 * 1024u32).map(|n| (n % 251) as u8).collect();
        store.put(&key, bytes.clone()).await.unwrap();
        assert!(store.get(&key).await.unwrap().unwrap() == bytes);
    }

    pub async fn concurrent_puts_leave_one_whole_object(store: Arc<dyn BlobStore>) {
        let key = unique("raced");
        let versions: Vec<Vec<u8>> = (0..6u8).map(|n| vec![n; 256 * 1024]).collect();
        let puts = versions.iter().cloned().map(|bytes| {
            let (store, key) = (store.clone(), key.clone());
            async move { store.put(&key, bytes).await }
        });
        for put in futures_util::future::join_all(puts).await {
            put.unwrap();
        }
        let stored = store.get(&key).await.unwrap().unwrap();
        assert!(versions.contains(&stored), "one of the versions, whole");
    }
}
