#![doc = include_str!("../README.md")]

use std::path::{Path, PathBuf};
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use idconsent_kernel::blob::BlobStore;

    use super::FsBlobStore;

    async fn store() -> Option<(Arc<dyn BlobStore>, tempfile::TempDir)> {
        let dir = tempfile::tempdir().ok()?;
        Some((Arc::new(FsBlobStore::new(dir.path())), dir))
    }

    idconsent_kernel::blob_store_contract!(store);
}
