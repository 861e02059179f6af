use diesel::result::{DatabaseErrorKind, Error as DieselError};
use idconsent_kernel::StorageUnavailable;

/// A failure inside the storage adapter. Repositories map it onto their port's error enum;
/// it never crosses into a domain crate — except `Unreachable`'s [`StorageUnavailable`], which
/// the edges look for in the source chain to answer 503 and back off (issue 19).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Query(DieselError),
    /// The database cannot be reached or cannot take writes right now.
    #[error("database unreachable")]
    Unreachable(#[source] StorageUnavailable),
    #[error("the database task was cancelled or panicked")]
    Task,
    /// A repository aborted a transaction because a rule failed; the tag says which, for the
    /// repository's own mapping.
    #[error("transaction rolled back: {0}")]
    Rollback(&'static str),
}

impl From<DieselError> for DbError {
    fn from(error: DieselError) -> Self {
        match unreachable_reason(&error) {
            Some(reason) => DbError::Unreachable(StorageUnavailable::new(reason)),
            None => DbError::Query(error),
        }
    }
}

/// No connection could be checked out within the pool's wait: the server is down, refusing, or
/// every connection is stuck.
impl From<diesel::r2d2::PoolError> for DbError {
    fn from(error: diesel::r2d2::PoolError) -> Self {
        DbError::Unreachable(StorageUnavailable::new(format!(
            "no database connection available: {error}"
        )))
    }
}

/// Messages of failures that say the database is away rather than that the query was wrong
/// (diesel reports most of them as `DatabaseErrorKind::Unknown`): PostgreSQL shutting down,
/// restarting or in recovery, a lost connection; SQLite locked past `busy_timeout`, its disk
/// full or unwritable.
const UNREACHABLE_MESSAGES: [&str; 14] = [
    "terminating connection",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "server closed the connection",
    "connection refused",
    "could not connect",
    "no connection to the server",
    "ssl connection has been closed",
    "read-only transaction",
    "database is locked",
    "database or disk is full",
    "disk i/o error",
    "attempt to write a readonly database",
];

fn unreachable_reason(error: &DieselError) -> Option<String> {
    match error {
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection
            | DatabaseErrorKind::UnableToSendCommand
            | DatabaseErrorKind::ReadOnlyTransaction,
            info,
        ) => Some(info.message().to_owned()),
        DieselError::DatabaseError(_, info) => {
            let message = info.message().to_ascii_lowercase();
            UNREACHABLE_MESSAGES
                .iter()
                .any(|known| message.contains(known))
                .then(|| info.message().to_owned())
        }
        _ => None,
    }
}

impl DbError {
    /// Whether this is the database being away (503) rather than a failed query.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, DbError::Unreachable(_))
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn database_error(kind: DatabaseErrorKind, message: &str) -> DbError {
        DieselError::DatabaseError(kind, Box::new(message.to_owned())).into()
    }

    #[test]
    fn outages_are_unreachable_and_query_failures_are_not() {
        for (kind, message) in [
            (
                DatabaseErrorKind::ClosedConnection,
                "server closed the connection unexpectedly",
            ),
            (
                DatabaseErrorKind::Unknown,
                "terminating connection due to administrator command",
            ),
            (
                DatabaseErrorKind::Unknown,
                "FATAL: the database system is in recovery mode",
            ),
            (
                DatabaseErrorKind::ReadOnlyTransaction,
                "cannot execute INSERT in a read-only transaction",
            ),
            (DatabaseErrorKind::Unknown, "database is locked"),
            (DatabaseErrorKind::Unknown, "database or disk is full"),
        ] {
            assert!(database_error(kind, message).is_unreachable(), "{message}");
        }
        for (kind, message) in [
            (DatabaseErrorKind::UniqueViolation, "duplicate key value"),
            (DatabaseErrorKind::Unknown, "column \"nope\" does not exist"),
        ] {
            assert!(!database_error(kind, message).is_unreachable(), "{message}");
        }
        assert!(!DbError::from(DieselError::NotFound).is_unreachable());
    }
}
