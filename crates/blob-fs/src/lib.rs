#![doc = include_str!("../README.md")]

use std::path::{Path, PathBuf};

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
        let mut temporary = path.clone().into_os_string();
        temporary.push(".partial");
        tokio::fs::write(&temporary, bytes)
            .await
            .map_err(unavailable)?;
        tokio::fs::rename(&temporary, &path)
            .await
            .map_err(unavailable)
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
    use super::*;

    #[tokio::test]
    async fn the_blob_store_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsBlobStore::new(dir.path());
        assert!(store.get("merchants/m/doc.pdf").await.unwrap().is_none());
        store
            .put("merchants/m/doc.pdf", b"%PDF-1".to_vec())
            .await
            .unwrap();
        assert_eq!(
            store.get("merchants/m/doc.pdf").await.unwrap().unwrap(),
            b"%PDF-1"
        );
        store
            .put("merchants/m/doc.pdf", b"%PDF-2".to_vec())
            .await
            .unwrap();
        assert_eq!(
            store.get("merchants/m/doc.pdf").await.unwrap().unwrap(),
            b"%PDF-2"
        );
        for bad in ["../escape", "/etc/passwd", "a b"] {
            assert!(matches!(
                store.put(bad, vec![]).await,
                Err(BlobError::InvalidKey)
            ));
            assert!(matches!(store.get(bad).await, Err(BlobError::InvalidKey)));
        }
        assert!(!dir.path().parent().unwrap().join("escape").exists());
    }
}
