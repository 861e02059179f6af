use diesel::migration::MigrationSource;
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::db::{AnyConnection, Backend, Db};
use crate::error::OpenError;

const SQLITE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// Serialises concurrent `migrate` runs of several processes on one PostgreSQL database.
const MIGRATION_LOCK_KEY: i64 = 0x1dc0_5e47;

#[derive(Debug, thiserror::Error)]
enum MigrateError {
    #[error(transparent)]
    Query(#[from] diesel::result::Error),
    #[error("{0}")]
    Migration(String),
}

impl From<MigrateError> for OpenError {
    fn from(error: MigrateError) -> Self {
        OpenError::Migrate(error.to_string())
    }
}

/// The embedded migration names of a backend, in order.
pub fn migration_names(backend: Backend) -> Vec<String> {
    let names = match backend {
        Backend::Sqlite => MigrationSource::<diesel::sqlite::Sqlite>::migrations(&SQLITE)
            .map(|list| list.iter().map(|m| m.name().to_string()).collect()),
        Backend::Postgres => MigrationSource::<diesel::pg::Pg>::migrations(&POSTGRES)
            .map(|list| list.iter().map(|m| m.name().to_string()).collect()),
    };
    let mut names: Vec<String> = names.unwrap_or_default();
    names.sort();
    names
}

/// Diesel reports versions (`20261121000001`); people want names
/// (`2026-11-21-000001_outgoing_messages`).
fn with_names(backend: Backend, versions: Vec<String>) -> Vec<String> {
    let names = migration_names(backend);
    versions
        .into_iter()
        .map(|version| {
            names
                .iter()
                .find(|name| {
                    name.split('_')
                        .next()
                        .is_some_and(|v| v.replace('-', "") == version)
                })
                .cloned()
                .unwrap_or(version)
        })
        .collect()
}

impl Db {
    /// Applies every pending migration and returns the names applied. Safe to run from several
    /// processes at once: SQLite holds its write lock, PostgreSQL an advisory lock.
    pub fn migrate(&self) -> Result<Vec<String>, OpenError> {
        self.with_write_connection_blocking(|conn| {
            let applied = match conn {
                AnyConnection::Sqlite(c) => c.immediate_transaction(|c| {
                    c.run_pending_migrations(SQLITE)
                        .map(|done| done.iter().map(ToString::to_string).collect::<Vec<_>>())
                        .map_err(|e| MigrateError::Migration(e.to_string()))
                })?,
                AnyConnection::Postgres(c) => c.transaction(|c| {
                    diesel::sql_query(format!(
                        "SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"
                    ))
                    .execute(c)?;
                    c.run_pending_migrations(POSTGRES)
                        .map(|done| done.iter().map(ToString::to_string).collect::<Vec<_>>())
                        .map_err(|e| MigrateError::Migration(e.to_string()))
                })?,
            };
            Ok(with_names(self.backend(), applied))
        })
    }

    /// Reverts every applied migration (tests check that each `down.sql` undoes its `up.sql`).
    pub fn revert_all_migrations(&self) -> Result<Vec<String>, OpenError> {
        self.with_write_connection_blocking(|conn| {
            let reverted = match conn {
                AnyConnection::Sqlite(c) => c.revert_all_migrations(SQLITE),
                AnyConnection::Postgres(c) => c.revert_all_migrations(POSTGRES),
            }
            .map_err(|e| OpenError::Migrate(e.to_string()))?;
            Ok(with_names(
                self.backend(),
                reverted.iter().map(ToString::to_string).collect(),
            ))
        })
    }

    /// Reverts the newest applied migration (tests of a migration's data conversion).
    pub fn revert_last_migration(&self) -> Result<String, OpenError> {
        self.with_write_connection_blocking(|conn| {
            let reverted = match conn {
                AnyConnection::Sqlite(c) => c.revert_last_migration(SQLITE),
                AnyConnection::Postgres(c) => c.revert_last_migration(POSTGRES),
            }
            .map_err(|e| OpenError::Migrate(e.to_string()))?;
            Ok(with_names(self.backend(), vec![reverted.to_string()]).remove(0))
        })
    }
}
