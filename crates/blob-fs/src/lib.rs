#![doc = include_str!("../README.md")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use idconsent_kernel::blob::{BlobError, BlobStore, is_valid_key};

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
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(unavailable)?;
        }
        // A temporary file of this write's own (two writes of one key must not share one), then
        // an atomic rename: a reader sees the old object or the new one, never a part.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let mut temporary = path.clone().into_os_string();
        temporary.push(format!(
            ".partial-{}-{}",
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        tokio::fs::write(&temporary, bytes)
            .await
            .map_err(unavailable)?;
        tokio::fs::rename(&temporary, &path)
            .await
            .map_err(unavailable)
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        match tokio::fs::remove_file(self.path(key)?).await {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
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
