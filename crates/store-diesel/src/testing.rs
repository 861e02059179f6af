//! Fresh databases for tests: a SQLite file per test, a PostgreSQL schema per test.
//!
//! PostgreSQL runs when `IDC_TEST_DATABASE_URL` is set. Without it the PostgreSQL half of a suite
//! prints a skip note and passes — unless the environment demands the backend: `CI=true`, or
//! `REQUIRE_BACKENDS` naming `postgres`. Then a missing or unreachable server fails the test,
//! because a skipped backend proves nothing.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};

use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};

use crate::db::{Backend, Db, DbOptions};

pub const TEST_DATABASE_URL_VAR: &str = "IDC_TEST_DATABASE_URL";

/// A migrated, empty database that disappears with this value.
#[derive(Debug)]
pub struct TestDatabase {
    pub db: Db,
    pub url: String,
    cleanup: Cleanup,
}

#[derive(Debug)]
enum Cleanup {
    Directory(#[allow(dead_code)] tempfile::TempDir),
    Schema { admin_url: String, schema: String },
}

impl TestDatabase {
    /// A new SQLite database file in a temporary directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let url = format!("sqlite://{}", dir.path().join("test.db").display());
        let db = open_and_migrate(&url);
        Self {
            db,
            url,
            cleanup: Cleanup::Directory(dir),
        }
    }

    /// A new schema in the PostgreSQL database of `IDC_TEST_DATABASE_URL`, or `None` (with a
    /// printed note) when PostgreSQL is not configured and not required.
    pub fn postgres() -> Option<Self> {
        let Some(admin_url) = postgres_admin_url() else {
            if postgres_required() {
                panic!(
                    "PostgreSQL is required here (CI=true or REQUIRE_BACKENDS) but \
                     {TEST_DATABASE_URL_VAR} is not set"
                );
            }
            note_postgres_skipped();
            return None;
        };
        let schema = format!("idc_test_{}", random_suffix());
        let mut admin = PgConnection::establish(&admin_url).unwrap_or_else(|error| {
            panic!("cannot reach PostgreSQL at {TEST_DATABASE_URL_VAR}: {error}")
        });
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .expect("create test schema");
        let url = with_search_path(&admin_url, &schema);
        let db = open_and_migrate(&url);
        Some(Self {
            db,
            url,
            cleanup: Cleanup::Schema { admin_url, schema },
        })
    }

    /// Runs raw SQL (test set-up: rows as an older version wrote them).
    pub async fn execute(&self, sql: impl Into<String>) {
        use diesel::RunQueryDsl;
        let sql = sql.into();
        self.db
            .write(move |conn| {
                match conn {
                    crate::AnyConnection::Sqlite(c) => diesel::sql_query(sql).execute(c)?,
                    crate::AnyConnection::Postgres(c) => diesel::sql_query(sql).execute(c)?,
                };
                Ok(())
            })
            .await
            .unwrap();
    }

    /// A fresh database of the given backend (`None` when that backend is skipped).
    pub fn of(backend: Backend) -> Option<Self> {
        match backend {
            Backend::Sqlite => Some(Self::sqlite()),
            Backend::Postgres => Self::postgres(),
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Cleanup::Schema { admin_url, schema } = &self.cleanup
            && let Ok(mut admin) = PgConnection::establish(admin_url)
        {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

/// The PostgreSQL URL tests should use, if any.
pub fn postgres_admin_url() -> Option<String> {
    std::env::var(TEST_DATABASE_URL_VAR)
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// Whether this environment insists on PostgreSQL.
pub fn postgres_required() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let required = std::env::var("REQUIRE_BACKENDS")
        .is_ok_and(|list| list.split(',').any(|b| b.trim() == "postgres"));
    ci || required
}

fn note_postgres_skipped() {
    static NOTED: AtomicBool = AtomicBool::new(false);
    if !NOTED.swap(true, Ordering::SeqCst) {
        use std::io::Write;
        // Straight to the process's stderr: the test harness captures `eprintln!` of passing
        // tests, and this note must be seen.
        let _ = writeln!(
            std::io::stderr(),
            "NOTE: PostgreSQL tests skipped: set {TEST_DATABASE_URL_VAR}=postgres://postgres@127.0.0.1:5432/test to run them"
        );
    }
}

fn open_and_migrate(url: &str) -> Db {
    let options = DbOptions {
        max_connections: 4,
        min_idle: 1,
        ..DbOptions::default()
    };
    let db = Db::open(url, &options).unwrap_or_else(|error| panic!("open {url}: {error}"));
    db.migrate()
        .unwrap_or_else(|error| panic!("migrate {url}: {error}"));
    db
}

/// Adds `options=-c search_path=<schema>` so every pooled connection lands in the test schema.
fn with_search_path(url: &str, schema: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

fn random_suffix() -> String {
    let random: std::sync::Arc<dyn idconsent_kernel::RandomSource> =
        std::sync::Arc::new(idconsent_kernel::OsRandom);
    random.hex(8)
}
