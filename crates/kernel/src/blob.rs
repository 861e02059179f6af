//! Binary objects (uploaded documents, generated PDFs) as a port.

use std::fmt;

use async_trait::async_trait;

use crate::clock::Timestamp;

/// Stores opaque bytes under a key.
///
/// Contract: `put` then `get` returns the same bytes; `put` on an existing key replaces it;
/// `get` of an unknown key is `Ok(None)`; `delete` removes the object (a later `get` is
/// `Ok(None)`) and succeeds for an unknown key too; keys are `[A-Za-z0-9_./-]`, without `..`,
/// at most 200 characters (anything else is `InvalidKey`).
///
/// `list_stored_before` is what a sweep of objects nothing names needs (identity images,
/// docs/security.md): see its own contract.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError>;
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError>;
    async fn delete(&self, key: &str) -> Result<(), BlobError>;

    /// The objects under `prefix` whose last `put` happened before `stored_before`, one page.
    ///
    /// Contract:
    /// - `prefix` is a valid key ending in `/` (`identity/`); anything else is `InvalidKey`.
    ///   An object is under it when its key starts with it, byte for byte — no wildcard (a
    ///   `_` or `%` in a key is itself, also in a SQL adapter).
    /// - Listed: every object under `prefix` whose key is greater than `after` (bytewise; all
    ///   when `None`) and whose last `put` completed before `stored_before`; in ascending
    ///   bytewise key order; at most `limit` of them (`limit` 0 lists nothing). A caller pages
    ///   by passing the last key it got as `after`, until a page is shorter than `limit`.
    /// - Never listed: an object whose last `put` is at or after `stored_before` (a `put` that
    ///   replaces an object makes it young again), a deleted object, anything outside `prefix`.
    /// - `stored_at` is the time of the object's last `put` on the store's own clock — the
    ///   wall clock of the machine or service that keeps the objects (a file's modification
    ///   time, S3's `LastModified`, a database's `now()`), which may differ from the caller's
    ///   by a few seconds: callers compare with a margin far larger than that.
    /// - An adapter may also list what an interrupted `put` left behind (a temporary file of
    ///   the filesystem adapter), under its own key, which `delete` removes: a sweep cleans it
    ///   up like any orphan.
    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError>;
}

/// One object as [`BlobStore::list_stored_before`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    pub key: String,
    /// When it was last put, on the store's clock.
    pub stored_at: Timestamp,
}

/// Whether `prefix` is acceptable to [`BlobStore::list_stored_before`]: a valid key that ends
/// with `/`.
pub fn is_valid_prefix(prefix: &str) -> bool {
    prefix.ends_with('/') && is_valid_key(prefix)
}

/// [`BlobStore::list_stored_before`]'s selection over entries an adapter gathered in any order:
/// filtered by `after` and `stored_before`, sorted by key, cut to `limit`.
pub fn select_page(
    mut entries: Vec<StoredBlob>,
    stored_before: Timestamp,
    after: Option<&str>,
    limit: usize,
) -> Vec<StoredBlob> {
    entries.retain(|entry| {
        entry.stored_at < stored_before && after.is_none_or(|after| entry.key.as_str() > after)
    });
    entries.sort_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
    entries.truncate(limit);
    entries
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
    fn prefixes_are_folders() {
        assert!(is_valid_prefix("identity/"));
        assert!(is_valid_prefix("identity/idv_01/"));
        for bad in ["identity", "/identity/", "../", "a/../", ""] {
            assert!(!is_valid_prefix(bad), "{bad}");
        }
    }

    #[test]
    fn a_page_is_filtered_sorted_and_cut() {
        let at = Timestamp::from_millis;
        let entry = |key: &str, millis| StoredBlob {
            key: key.into(),
            stored_at: at(millis),
        };
        let entries = vec![
            entry("p/c", 10),
            entry("p/a", 10),
            entry("p/young", 50),
            entry("p/b", 10),
        ];
        let keys = |page: Vec<StoredBlob>| page.into_iter().map(|e| e.key).collect::<Vec<_>>();
        assert_eq!(
            keys(select_page(entries.clone(), at(50), None, 10)),
            ["p/a", "p/b", "p/c"]
        );
        assert_eq!(
            keys(select_page(entries.clone(), at(50), Some("p/a"), 1)),
            ["p/b"]
        );
        assert!(select_page(entries, at(10), None, 10).is_empty());
    }

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

    use std::time::Duration;

    use super::{BlobError, BlobStore, StoredBlob};
    use crate::clock::{Clock, SystemClock};

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
                a_listing_names_what_was_stored_before_a_time_under_a_folder,
                a_listing_pages_in_key_order,
                a_listing_needs_a_folder_prefix,
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

    fn keys(listed: &[StoredBlob]) -> Vec<&str> {
        listed.iter().map(|entry| entry.key.as_str()).collect()
    }

    pub async fn a_listing_names_what_was_stored_before_a_time_under_a_folder(
        store: Arc<dyn BlobStore>,
    ) {
        let root = format!("{}/", unique("listed"));
        let hour = Duration::from_secs(3600);
        let stored = [
            format!("{root}a/front"),
            format!("{root}b/selfie"),
            format!("{root}b_c/x"),
            format!("{root}bzc/y"),
        ];
        for key in &stored {
            store.put(key, b"face".to_vec()).await.unwrap();
        }
        // Next to the folder, not in it: its name starts with the folder's without the slash.
        let sibling = format!("{}-sibling/z", root.trim_end_matches('/'));
        store.put(&sibling, b"other".to_vec()).await.unwrap();
        let (now, clock) = (SystemClock.now(), SystemClock);

        let everything = store
            .list_stored_before(&root, now.plus(hour), None, 100)
            .await
            .unwrap();
        assert_eq!(
            keys(&everything),
            stored.iter().map(String::as_str).collect::<Vec<_>>()
        );
        for entry in &everything {
            // The store's clock is a wall clock: within minutes of this machine's.
            assert!(entry.stored_at > now.minus(hour) && entry.stored_at < clock.now().plus(hour));
        }
        // Stored after the time asked for: not listed.
        let before = store
            .list_stored_before(&root, now.minus(hour), None, 100)
            .await
            .unwrap();
        assert!(before.is_empty(), "{before:?}");
        // A folder is a byte prefix: `_` is no wildcard, `b/` is not `b_c/`.
        let folder = store
            .list_stored_before(&format!("{root}b_c/"), now.plus(hour), None, 100)
            .await
            .unwrap();
        assert_eq!(keys(&folder), [stored[2].as_str()]);
        let folder = store
            .list_stored_before(&format!("{root}b/"), now.plus(hour), None, 100)
            .await
            .unwrap();
        assert_eq!(keys(&folder), [stored[1].as_str()]);
        // Deleted: not listed.
        store.delete(&stored[0]).await.unwrap();
        let after_delete = store
            .list_stored_before(&root, clock.now().plus(hour), None, 100)
            .await
            .unwrap();
        assert_eq!(
            keys(&after_delete),
            stored[1..].iter().map(String::as_str).collect::<Vec<_>>()
        );
        // An unknown folder is empty, not an error.
        let unknown = format!("{}/", unique("never"));
        let nothing = store
            .list_stored_before(&unknown, now.plus(hour), None, 100)
            .await
            .unwrap();
        assert!(nothing.is_empty());
    }

    pub async fn a_listing_pages_in_key_order(store: Arc<dyn BlobStore>) {
        let root = format!("{}/", unique("paged"));
        let mut stored: Vec<String> = ["e", "a", "d", "b", "c"]
            .iter()
            .map(|name| format!("{root}idv_{name}/selfie"))
            .collect();
        for key in &stored {
            store.put(key, b"face".to_vec()).await.unwrap();
        }
        stored.sort();
        let later = SystemClock.now().plus(Duration::from_secs(3600));
        let mut seen: Vec<String> = Vec::new();
        loop {
            let page = store
                .list_stored_before(&root, later, seen.last().map(String::as_str), 2)
                .await
                .unwrap();
            assert!(page.len() <= 2);
            let short = page.len() < 2;
            seen.extend(page.into_iter().map(|entry| entry.key));
            if short {
                break;
            }
        }
        assert_eq!(seen, stored);
        assert!(
            store
                .list_stored_before(&root, later, None, 0)
                .await
                .unwrap()
                .is_empty()
        );
    }

    pub async fn a_listing_needs_a_folder_prefix(store: Arc<dyn BlobStore>) {
        let later = SystemClock.now().plus(Duration::from_secs(3600));
        for bad in ["identity", "", "/etc/", "a/../", "../", "a b/"] {
            assert!(
                matches!(
                    store.list_stored_before(bad, later, None, 10).await,
                    Err(BlobError::InvalidKey)
                ),
                "{bad}"
            );
        }
    }
}
