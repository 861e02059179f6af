//! PostgreSQL write transactions that begin holding an advisory lock: `BEGIN` and the lock go
//! to the server as one simple query, one round trip instead of two.

use diesel::PgConnection;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};

use crate::error::DbError;

/// Whether `key` can be written into SQL as a string literal as it is: the simple query
/// protocol takes no parameters. Keys are built from ids, environments and phone numbers;
/// any other key takes the lock in a statement of its own, with the key bound.
fn literal_safe(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":+_.-@".contains(&b))
}

/// Runs `f` in a transaction that holds the advisory lock of `key` from its start (the same
/// lock as [`crate::repo::advisory_lock`]: `hashtext` of the key), committing when `f`
/// succeeds and rolling back when it fails.
pub(super) fn transaction<T>(
    conn: &mut PgConnection,
    key: &str,
    f: impl FnOnce(&mut PgConnection) -> Result<T, DbError>,
) -> Result<T, DbError> {
    if !literal_safe(key) {
        return diesel::Connection::transaction(conn, |c| {
            crate::repo::advisory_lock(crate::db::AnyConnection::Postgres(c), key)?;
            f(c)
        });
    }
    let begin = format!("BEGIN; SELECT pg_advisory_xact_lock(hashtext('{key}'))");
    if let Err(error) = AnsiTransactionManager::begin_transaction_sql(conn, &begin) {
        // The `BEGIN` may have run and the lock failed (a statement timeout): end the block,
        // so that the connection goes back to the pool outside any transaction.
        let _ = conn.batch_execute("ROLLBACK");
        return Err(error.into());
    }
    match f(conn) {
        Ok(value) => {
            AnsiTransactionManager::commit_transaction(conn)?;
            Ok(value)
        }
        Err(error) => {
            // As diesel's own `transaction`: the closure's error wins over a failed rollback,
            // which leaves the connection broken and the pool discards it.
            let _ = AnsiTransactionManager::rollback_transaction(conn);
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::literal_safe;

    #[test]
    fn only_plain_keys_are_written_as_literals() {
        assert!(literal_safe("consent:sandbox:+15551234567"));
        assert!(literal_safe("devices:usr_01J8Z"));
        for key in [
            "",
            "it's",
            "a\\b",
            "x; DROP TABLE t",
            "naïve",
            "a\0b",
            "a b",
        ] {
            assert!(!literal_safe(key), "{key:?}");
        }
    }
}
