//! Where uploaded and generated files live: the database (the default on PostgreSQL: every
//! process reads them), the data directory (the default on SQLite: one machine) or an
//! S3-compatible object store (large deployments). ADR 0037.

use secrecy::{ExposeSecret, SecretString};

use super::{ConfigError, secret};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BlobStoreKind {
    /// `database` on PostgreSQL, `fs` on SQLite.
    Auto,
    /// `<data dir>/blobs` on the local filesystem: one process, or processes sharing that
    /// directory.
    Fs,
    /// Tables of the database (`blob_objects`, `blob_chunks`): every process on the database.
    Database,
    /// An S3-compatible object store (`IDC_S3_*`).
    S3,
}

#[derive(Debug, Clone, clap::Args)]
pub struct BlobArgs {
    /// Where files (merchant documents, PDFs, identity images) are kept: `auto` (the database
    /// on PostgreSQL, the data directory on SQLite), `fs`, `database` or `s3`.
    #[arg(
        long,
        env = "IDC_BLOB_STORE",
        value_enum,
        default_value = "auto",
        global = true
    )]
    pub blob_store: BlobStoreKind,

    /// The bucket (must exist).
    #[arg(long, env = "IDC_S3_BUCKET", global = true)]
    pub s3_bucket: Option<String>,

    #[arg(
        long,
        env = "IDC_S3_REGION",
        default_value = "us-east-1",
        global = true
    )]
    pub s3_region: String,

    /// An S3-compatible server, e.g. `http://127.0.0.1:9000` (default: AWS).
    #[arg(long, env = "IDC_S3_ENDPOINT", global = true)]
    pub s3_endpoint: Option<String>,

    #[arg(long, env = "IDC_S3_ACCESS_KEY_ID", value_parser = secret, hide_env_values = true, global = true)]
    pub s3_access_key_id: Option<SecretString>,

    #[arg(long, env = "IDC_S3_SECRET_ACCESS_KEY", value_parser = secret, hide_env_values = true, global = true)]
    pub s3_secret_access_key: Option<SecretString>,

    /// Prefix of every object's key in the bucket.
    #[arg(
        long,
        env = "IDC_S3_PREFIX",
        default_value = "idconsent",
        global = true
    )]
    pub s3_prefix: String,
}

#[derive(Debug, Clone, Default)]
pub enum BlobConfig {
    /// The database on PostgreSQL, `<data dir>/blobs` on SQLite (decided by the wiring, which
    /// knows the backend).
    #[default]
    Auto,
    /// `<data dir>/blobs`.
    Fs,
    /// The database's `blob_objects` and `blob_chunks`.
    Database,
    S3(idconsent_blob_s3::S3Settings),
}

impl BlobArgs {
    pub fn resolve(self) -> Result<BlobConfig, ConfigError> {
        match self.blob_store {
            BlobStoreKind::Auto => return Ok(BlobConfig::Auto),
            BlobStoreKind::Fs => return Ok(BlobConfig::Fs),
            BlobStoreKind::Database => return Ok(BlobConfig::Database),
            BlobStoreKind::S3 => {}
        }
        let required = |value: Option<String>, variable: &'static str| {
            value
                .filter(|v| !v.trim().is_empty())
                .ok_or(ConfigError::Invalid {
                    variable,
                    reason: "is required when IDC_BLOB_STORE=s3".into(),
                })
        };
        let exposed = |value: Option<SecretString>| value.map(|v| v.expose_secret().to_owned());
        Ok(BlobConfig::S3(idconsent_blob_s3::S3Settings {
            bucket: required(self.s3_bucket, "IDC_S3_BUCKET")?,
            region: self.s3_region,
            endpoint: self.s3_endpoint,
            access_key_id: required(exposed(self.s3_access_key_id), "IDC_S3_ACCESS_KEY_ID")?,
            secret_access_key: required(
                exposed(self.s3_secret_access_key),
                "IDC_S3_SECRET_ACCESS_KEY",
            )?,
            prefix: self.s3_prefix,
        }))
    }
}
