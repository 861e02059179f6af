#![doc = include_str!("../README.md")]

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use idconsent_kernel::Timestamp;
use idconsent_kernel::blob::{
    BlobError, BlobStore, StoredBlob, is_valid_key, is_valid_prefix, select_page,
};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

/// Where the objects go.
#[derive(Clone)]
pub struct S3Settings {
    pub bucket: String,
    pub region: String,
    /// An S3-compatible server's URL (`None`: AWS).
    pub endpoint: Option<String>,
    pub access_key_id: String,
    pub secret_access_key: String,
    /// Prepended to every key (`idconsent/`), so one bucket can serve several deployments.
    pub prefix: String,
}

impl fmt::Debug for S3Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Settings")
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("endpoint", &self.endpoint)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("S3 object store: {0}")]
pub struct S3ConfigError(#[from] object_store::Error);

#[derive(Debug, Clone)]
pub struct S3BlobStore {
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

impl S3BlobStore {
    pub fn new(settings: &S3Settings) -> Result<Self, S3ConfigError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&settings.bucket)
            .with_region(&settings.region)
            .with_access_key_id(&settings.access_key_id)
            .with_secret_access_key(&settings.secret_access_key);
        if let Some(endpoint) = &settings.endpoint {
            builder = builder
                .with_endpoint(endpoint)
                .with_virtual_hosted_style_request(false)
                .with_allow_http(endpoint.starts_with("http://"));
        }
        Ok(Self {
            store: Arc::new(builder.build()?),
            prefix: settings.prefix.trim_matches('/').to_owned(),
        })
    }

    fn path(&self, key: &str) -> Result<Path, BlobError> {
        if !is_valid_key(key) {
            return Err(BlobError::InvalidKey);
        }
        Path::parse(self.full(key)).map_err(|_| BlobError::InvalidKey)
    }

    fn full(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}/{key}", self.prefix)
        }
    }

    /// The key of an object the bucket lists, `None` when it is not one of ours.
    fn key_of<'a>(&self, location: &'a Path) -> Option<&'a str> {
        let full = location.as_ref();
        let key = if self.prefix.is_empty() {
            full
        } else {
            full.strip_prefix(self.prefix.as_str())?.strip_prefix('/')?
        };
        is_valid_key(key).then_some(key)
    }
}

fn unavailable(error: object_store::Error) -> BlobError {
    BlobError::Unavailable(Box::new(error))
}

#[async_trait]
impl BlobStore for S3BlobStore {
    /// One PUT: S3 replaces objects atomically, so a reader sees the old object or the new one.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let path = self.path(key)?;
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// S3 answers a DELETE of a missing key with success; other stores' "not found" is too.
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        let path = self.path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let path = self.path(key)?;
        match self.store.get(&path).await {
            Ok(found) => Ok(Some(found.bytes().await.map_err(unavailable)?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
    }

    /// ListObjectsV2 under the prefix, starting after `after` (S3 skips the rest server-side);
    /// `stored_at` is S3's `LastModified` (whole seconds). The listing is read to its end and
    /// then cut to `limit`: the order of `object_store`'s stream is not promised.
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
        if limit == 0 {
            return Ok(Vec::new());
        }
        // object_store's prefixes are whole path segments: `identity/` is the segment `identity`.
        let folder = Path::parse(self.full(prefix.trim_end_matches('/')))
            .map_err(|_| BlobError::InvalidKey)?;
        let listing = match after {
            Some(after) => {
                let offset = Path::parse(self.full(after)).map_err(|_| BlobError::InvalidKey)?;
                self.store.list_with_offset(Some(&folder), &offset)
            }
            None => self.store.list(Some(&folder)),
        };
        let objects: Vec<object_store::ObjectMeta> =
            listing.try_collect().await.map_err(unavailable)?;
        let found = objects
            .iter()
            .filter_map(|object| {
                let key = self.key_of(&object.location)?;
                key.starts_with(prefix).then(|| StoredBlob {
                    key: key.to_owned(),
                    stored_at: Timestamp::from_millis(object.last_modified.timestamp_millis()),
                })
            })
            .collect();
        Ok(select_page(found, stored_before, after, limit))
    }
}
