#![doc = include_str!("../README.md")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::UNIX_EPOCH;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::blob::{
    BlobError, BlobStore, StoredBlob, is_valid_key, is_valid_prefix, select_page,
};

#[derive(Debug, Clone)]
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    fn path(&self, key: &str) -> Result<PathBuf, BlobError> {
        if is_valid_key(key) {
            Ok(self.root.join(Path::new(key)))
        } else {
            Err(BlobError::InvalidKey)
        }
    }
}

fn unavailable(error: std::io::Error) -> BlobError {
    BlobError::Unavailable(Box::new(error))
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let path = self.path(key)?;
        // A temporary file of this write's own (two writes of one key must not share one), then
        // an atomic rename: a reader sees the old object or the new one, never a part.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let mut temporary = path.clone().into_os_string();
        temporary.push(format!(
            ".partial-{}-{}",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        // A delete elsewhere in the folder removes it once it is empty (see `delete`), possibly
        // between our `create_dir_all` and our write — or inside `create_dir_all`, which then
        // finds the folder existing and gone at once (AlreadyExists): the folder is made again.
        let mut attempts = 0;
        let retried = |error: &std::io::Error, attempts: u32| {
            matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::AlreadyExists
            ) && attempts < 3
        };
        loop {
            if let Some(parent) = path.parent()
                && let Err(error) = tokio::fs::create_dir_all(parent).await
            {
                if retried(&error, attempts) {
                    attempts += 1;
                    continue;
                }
                return Err(unavailable(error));
            }
            match tokio::fs::write(&temporary, &bytes).await {
                Ok(()) => break,
                Err(error) if retried(&error, attempts) => attempts += 1,
                Err(error) => return Err(unavailable(error)),
            }
        }
        tokio::fs::rename(&temporary, &path)
            .await
            .map_err(unavailable)
    }

    /// Removes the file, then the folders it leaves empty (up to the root): every identity
    /// verification has a folder of its own, and empty ones would pile up and slow every sweep.
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(unavailable(error)),
        }
        let mut folder = path.parent();
        while let Some(dir) = folder {
            // `remove_dir` refuses a folder that is not empty: the first one ends the walk.
            if dir == self.root || tokio::fs::remove_dir(dir).await.is_err() {
                break;
            }
            folder = dir.parent();
        }
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
    }

    /// Walks the prefix's folder; `stored_at` is each file's modification time (a `put` writes
    /// a new file, so it is the time of the last `put`). Temporary files of interrupted writes
    /// are listed under their own names, so a sweep removes them too. Symbolic links are not
    /// followed (nothing this adapter writes is one).
    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError> {
        if !is_valid_prefix(prefix) {
            return Err(BlobError::InvalidKey);
        }
        let mut found = Vec::new();
        let mut pending = vec![self.root.join(prefix)];
        while let Some(dir) = pending.pop() {
            let mut entries = match tokio::fs::read_dir(&dir).await {
                Ok(entries) => entries,
                // An unknown prefix, or a folder a concurrent delete just removed.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(unavailable(error)),
            };
            while let Some(entry) = entries.next_entry().await.map_err(unavailable)? {
                let Ok(kind) = entry.file_type().await else {
                    continue;
                };
                if kind.is_dir() {
                    pending.push(entry.path());
                } else if kind.is_file()
                    && let Some(listed) = self.listed(&entry.path(), &entry).await?
                {
                    found.push(listed);
                }
            }
        }
        Ok(select_page(found, stored_before, after, limit))
    }
}

impl FsBlobStore {
    /// The file at `path` as a listing names it; `None` when it vanished meanwhile or its name
    /// is no key.
    async fn listed(
        &self,
        path: &Path,
        entry: &tokio::fs::DirEntry,
    ) -> Result<Option<StoredBlob>, BlobError> {
        let Some(key) = path
            .strip_prefix(&self.root)
            .ok()
            .and_then(Path::to_str)
            .filter(|key| is_valid_key(key))
        else {
            return Ok(None);
        };
        let modified = match entry.metadata().await.and_then(|meta| meta.modified()) {
            Ok(modified) => modified,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(unavailable(error)),
        };
        let since_epoch = modified.duration_since(UNIX_EPOCH).unwrap_or_default();
        Ok(Some(StoredBlob {
            key: key.to_owned(),
            stored_at: Timestamp::from_millis(
                i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX),
            ),
        }))
    }
}

/// Another store (the database, a bucket) that still reads the objects an earlier
/// configuration kept in a directory: new objects go to `primary`; a key `primary` lacks is
/// read from the directory; a delete removes both copies, so a deleted object cannot come back.
/// Nothing is copied — an object written again lands in `primary`, which is read first.
#[derive(Debug)]
pub struct DirectoryFallback {
    primary: Arc<dyn BlobStore>,
    earlier: FsBlobStore,
}

impl DirectoryFallback {
    pub fn new(primary: Arc<dyn BlobStore>, earlier: FsBlobStore) -> Self {
        Self { primary, earlier }
    }
}

#[async_trait]
impl BlobStore for DirectoryFallback {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        self.primary.put(key, bytes).await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        match self.primary.get(key).await? {
            Some(bytes) => Ok(Some(bytes)),
            None => self.earlier.get(key).await,
        }
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.primary.delete(key).await?;
        self.earlier.delete(key).await
    }

    /// Both stores' listings, merged: an object in both is listed once, dated by the copy that
    /// is read (the primary's, which a young copy keeps from the sweep even when an old one
    /// sits in the directory). Windows of the union's next `limit` keys are judged in turn until
    /// the page is full or both stores are exhausted, so a short page still means the end.
    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError> {
        let every_age = Timestamp::from_millis(i64::MAX);
        let mut cursor = after.map(str::to_owned);
        let mut page = Vec::new();
        while page.len() < limit {
            let primary = self
                .primary
                .list_stored_before(prefix, every_age, cursor.as_deref(), limit)
                .await?;
            let earlier = self
                .earlier
                .list_stored_before(prefix, every_age, cursor.as_deref(), limit)
                .await?;
            let exhausted = primary.len() < limit && earlier.len() < limit;
            let mut union = primary;
            for entry in earlier {
                if !union.iter().any(|listed| listed.key == entry.key) {
                    union.push(entry);
                }
            }
            // Nothing beyond this window when both stores ran out and the union fits in it.
            let exhausted = exhausted && union.len() <= limit;
            // The union's first `limit` keys: each store listed its own first `limit`.
            let window = select_page(union, every_age, None, limit);
            let Some(last) = window.last().map(|entry| entry.key.clone()) else {
                break;
            };
            page.extend(
                window
                    .into_iter()
                    .filter(|entry| entry.stored_at < stored_before),
            );
            if exhausted {
                break;
            }
            cursor = Some(last);
        }
        page.truncate(limit);
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use idconsent_kernel::blob::BlobStore;

    use super::{DirectoryFallback, FsBlobStore};

    async fn store() -> Option<(Arc<dyn BlobStore>, tempfile::TempDir)> {
        let dir = tempfile::tempdir().ok()?;
        Some((Arc::new(FsBlobStore::new(dir.path())), dir))
    }

    idconsent_kernel::blob_store_contract!(store);

    #[tokio::test]
    async fn deleting_the_last_file_removes_its_folders_but_never_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsBlobStore::new(dir.path());
        for name in ["front", "selfie"] {
            let key = format!("identity/idv_1/{name}");
            store.put(&key, b"face".to_vec()).await.unwrap();
        }
        store.delete("identity/idv_1/front").await.unwrap();
        assert!(dir.path().join("identity/idv_1").is_dir());
        store.delete("identity/idv_1/selfie").await.unwrap();
        assert!(!dir.path().join("identity").exists());
        assert!(dir.path().is_dir());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_put_survives_a_delete_emptying_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FsBlobStore::new(dir.path()));
        for round in 0..200 {
            let (kept, removed) = (format!("f{round}/kept"), format!("f{round}/removed"));
            store.put(&removed, b"old".to_vec()).await.unwrap();
            let (a, b) = (store.clone(), store.clone());
            let put = tokio::spawn({
                let kept = kept.clone();
                async move { a.put(&kept, b"new".to_vec()).await }
            });
            let delete = tokio::spawn(async move { b.delete(&removed).await });
            put.await.unwrap().unwrap();
            delete.await.unwrap().unwrap();
            assert_eq!(store.get(&kept).await.unwrap().unwrap(), b"new", "{round}");
        }
    }

    mod fallback {
        use super::*;

        /// Both directories empty: the fallback is a store like any other.
        async fn store() -> Option<(Arc<dyn BlobStore>, (tempfile::TempDir, tempfile::TempDir))> {
            let (primary, earlier) = (tempfile::tempdir().ok()?, tempfile::tempdir().ok()?);
            let store = DirectoryFallback::new(
                Arc::new(FsBlobStore::new(primary.path())),
                FsBlobStore::new(earlier.path()),
            );
            Some((Arc::new(store), (primary, earlier)))
        }

        idconsent_kernel::blob_store_contract!(store);

        #[tokio::test]
        async fn files_stored_before_are_read_replaced_and_deleted() {
            let (primary_dir, earlier_dir) =
                (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let (primary, earlier) = (
                Arc::new(FsBlobStore::new(primary_dir.path())),
                FsBlobStore::new(earlier_dir.path()),
            );
            earlier
                .put("signatures/sr_1/document.pdf", b"old".to_vec())
                .await
                .unwrap();
            earlier
                .put("signatures/sr_2/document.pdf", b"two".to_vec())
                .await
                .unwrap();
            let store = DirectoryFallback::new(primary.clone(), earlier.clone());
            assert_eq!(
                store
                    .get("signatures/sr_1/document.pdf")
                    .await
                    .unwrap()
                    .unwrap(),
                b"old"
            );
            // Written again: the new version, from the primary store.
            store
                .put("signatures/sr_1/document.pdf", b"new".to_vec())
                .await
                .unwrap();
            assert_eq!(
                store
                    .get("signatures/sr_1/document.pdf")
                    .await
                    .unwrap()
                    .unwrap(),
                b"new"
            );
            assert_eq!(
                primary
                    .get("signatures/sr_1/document.pdf")
                    .await
                    .unwrap()
                    .unwrap(),
                b"new"
            );
            // Deleted: gone from both, the old copy does not come back.
            store.delete("signatures/sr_1/document.pdf").await.unwrap();
            store.delete("signatures/sr_2/document.pdf").await.unwrap();
            for key in [
                "signatures/sr_1/document.pdf",
                "signatures/sr_2/document.pdf",
            ] {
                assert!(store.get(key).await.unwrap().is_none(), "{key}");
                assert!(earlier.get(key).await.unwrap().is_none(), "{key}");
            }
        }
    }
}
