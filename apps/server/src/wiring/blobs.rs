//! The file store (ADR 0037): uploaded documents, certificates and identity images.

use std::sync::Arc;

use idconsent_blob_fs::{DirectoryFallback, FsBlobStore};
use idconsent_blob_s3::S3BlobStore;
use idconsent_kernel::{BlobStore, Clock};
use idconsent_store_diesel::{Backend, Db, DieselBlobStore};

use super::WiringError;
use crate::config::{BlobConfig, Config};

/// The store `config.blobs` names; `auto` is the database on PostgreSQL (so every process reads
/// every file) and the data directory on SQLite. In the database, files an earlier
/// configuration kept in `<data dir>/blobs` stay readable from there.
pub fn build(
    config: &Config,
    db: &Db,
    clock: &Arc<dyn Clock>,
) -> Result<Arc<dyn BlobStore>, WiringError> {
    let directory = config.data_dir.join("blobs");
    let in_database = match &config.blobs {
        BlobConfig::S3(settings) => return Ok(Arc::new(S3BlobStore::new(settings)?)),
        BlobConfig::Fs => false,
        BlobConfig::Database => true,
        BlobConfig::Auto => db.backend() == Backend::Postgres,
    };
    if !in_database {
        tracing::info!(directory = %directory.display(), "files are kept in the data directory");
        return Ok(Arc::new(FsBlobStore::new(directory)));
    }
    let database: Arc<dyn BlobStore> = Arc::new(DieselBlobStore::new(db.clone(), clock.clone()));
    if directory.is_dir() {
        tracing::info!(
            directory = %directory.display(),
            "files are kept in the database; those stored in the data directory before are read from there"
        );
        return Ok(Arc::new(DirectoryFallback::new(
            database,
            FsBlobStore::new(directory),
        )));
    }
    tracing::info!("files are kept in the database");
    Ok(database)
}
