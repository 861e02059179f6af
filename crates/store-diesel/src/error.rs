use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// A failure inside the storage adapter. Repositories map it onto their port's error enum;
/// it never crosses into a domain crate.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Query(#[from] DieselError),
    #[error("no database connection available: {0}")]
    Pool(#[from] diesel::r2d2::PoolError),
    #[error("the database task was cancelled or panicked")]
    Task,
    /// A repository aborted a transaction because a rule failed; the tag says which, for the
    /// repository's own mapping.
    #[error("transaction rolled back: {0}")]
    Rollback(&'static str),
}

impl DbError {
    pub fn is_unique_violation(&self) -> bool {
        matches!(
            self,
            DbError::Query(DieselError::DatabaseError(
                DatabaseErrorKind::UniqueViolation,
                _
            ))
        )
    }

    pub fn is_foreign_key_violation(&self) -> bool {
        matches!(
            self,
            DbError::Query(DieselError::DatabaseError(
                DatabaseErrorKind::ForeignKeyViolation,
                _
            ))
        )
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, DbError::Query(DieselError::NotFound))
    }

    pub fn rollback_tag(&self) -> Option<&'static str> {
        match self {
            DbError::Rollback(tag) => Some(tag),
            _ => None,
        }
    }
}

/// Why a database could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("unsupported database URL (expected sqlite://path or postgres://user@host/db): {0}")]
    UnsupportedUrl(String),
    #[error("cannot create the database directory {path}: {source}")]
    Directory {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot connect to the database: {0}")]
    Connect(#[from] diesel::r2d2::PoolError),
    #[error("migrations failed: {0}")]
    Migrate(String),
    #[error(transparent)]
    Db(#[from] DbError),
}
