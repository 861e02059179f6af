use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::{Connection, PgConnection, SqliteConnection};

use crate::error::{DbError, OpenError};

/// Which database a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Pool and timeout settings.
#[derive(Debug, Clone)]
pub struct DbOptions {
    /// Connections per pool (the SQLite read pool; PostgreSQL's only pool).
    pub max_connections: u32,
    /// Connections opened eagerly and kept idle.
    pub min_idle: u32,
    /// How long a caller waits for a free connection before failing.
    pub acquire_timeout: Duration,
    /// PostgreSQL `statement_timeout`.
    pub statement_timeout: Duration,
    /// SQLite `busy_timeout`: how long a writer waits for another process's write lock.
    pub busy_timeout: Duration,
}

impl Default for DbOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            min_idle: 2,
            acquire_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(30),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

type SqlitePool = Pool<ConnectionManager<SqliteConnection>>;
type PgPool = Pool<ConnectionManager<PgConnection>>;

enum Pools {
    Sqlite { read: SqlitePool, write: SqlitePool },
    Postgres(PgPool),
}

/// A database handle: cheap to clone, shared by every repository.
#[derive(Clone)]
pub struct Db {
    pools: Arc<Pools>,
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Db")
            .field("backend", &self.backend())
            .finish()
    }
}

/// A borrowed connection of either backend. Repositories write a query once and run it on
/// either variant with `with_conn!`.
pub enum AnyConnection<'a> {
    Sqlite(&'a mut SqliteConnection),
    Postgres(&'a mut PgConnection),
}

impl AnyConnection<'_> {
    /// A shorter borrow of the same connection, so one transaction can hand it to several
    /// helpers in turn.
    pub fn reborrow(&mut self) -> AnyConnection<'_> {
        match self {
            AnyConnection::Sqlite(c) => AnyConnection::Sqlite(c),
            AnyConnection::Postgres(c) => AnyConnection::Postgres(c),
        }
    }
}

impl fmt::Debug for AnyConnection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AnyConnection::Sqlite(_) => "AnyConnection::Sqlite",
            AnyConnection::Postgres(_) => "AnyConnection::Postgres",
        })
    }
}

impl Db {
    /// Connects to `url`: `sqlite://relative/path.db`, `sqlite:///absolute/path.db` or
    /// `postgres://…` (`postgresql://` too). Blocking; call it at start-up. Does not migrate.
    pub fn open(url: &str, options: &DbOptions) -> Result<Self, OpenError> {
        let pools = if let Some(path) = sqlite_path(url) {
            open_sqlite(path, options)?
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            open_postgres(url, options)?
        } else {
            return Err(OpenError::UnsupportedUrl(redact_url(url)));
        };
        Ok(Self {
            pools: Arc::new(pools),
        })
    }

    pub fn backend(&self) -> Backend {
        match &*self.pools {
            Pools::Sqlite { .. } => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
        }
    }

    /// Runs `f` with a read connection on the blocking pool. Single statements are atomic;
    /// wrap several in `conn.transaction` when they must see one snapshot.
    pub async fn read<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        let pools = self.pools.clone();
        run_blocking(move || match &*pools {
            Pools::Sqlite { read, .. } => f(AnyConnection::Sqlite(&mut *read.get()?)),
            Pools::Postgres(pool) => f(AnyConnection::Postgres(&mut *pool.get()?)),
        })
        .await
    }

    /// Runs `f` in a write transaction on the blocking pool: committed when `f` returns `Ok`,
    /// rolled back on `Err`. On SQLite the transaction is `BEGIN IMMEDIATE` on the single writer
    /// connection, so it never fails half-way for lack of the write lock.
    pub async fn write<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        let pools = self.pools.clone();
        run_blocking(move || match &*pools {
            Pools::Sqlite { write, .. } => write
                .get()?
                .immediate_transaction(|c| f(AnyConnection::Sqlite(c))),
            Pools::Postgres(pool) => pool.get()?.transaction(|c| f(AnyConnection::Postgres(c))),
        })
        .await
    }

    /// A trivial query, for readiness checks.
    pub async fn ping(&self) -> Result<(), DbError> {
        self.read(|conn| {
            crate::with_conn!(conn, |c| c.batch_execute("SELECT 1"))?;
            Ok(())
        })
        .await
    }

    /// A blocking connection for start-up work (migrations) and tests.
    pub(crate) fn with_write_connection_blocking<T>(
        &self,
        f: impl FnOnce(AnyConnection<'_>) -> Result<T, OpenError>,
    ) -> Result<T, OpenError> {
        match &*self.pools {
            Pools::Sqlite { write, .. } => f(AnyConnection::Sqlite(&mut *write.get()?)),
            Pools::Postgres(pool) => f(AnyConnection::Postgres(&mut *pool.get()?)),
        }
    }
}

/// Runs blocking database work off the async executor, inside the caller's tracing span.
async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, DbError> + Send + 'static,
) -> Result<T, DbError> {
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f))
        .await
        .map_err(|_| DbError::Task)?
}

fn sqlite_path(url: &str) -> Option<&str> {
    url.strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .map(|rest| rest.split('?').next().unwrap_or(rest))
        .filter(|path| !path.is_empty())
}

/// The URL without its password, for error messages.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[derive(Debug)]
struct SqliteSetup {
    busy_timeout_ms: u128,
    read_only: bool,
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for SqliteSetup {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        // WAL lets readers proceed while the writer writes; NORMAL sync is durable across
        // application crashes (a power loss may drop the last transactions, never corrupt).
        let mut pragmas = format!(
            "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;",
            self.busy_timeout_ms
        );
        if self.read_only {
            pragmas.push_str(" PRAGMA query_only = ON;");
        }
        conn.batch_execute(&pragmas)
            .map_err(diesel::r2d2::Error::QueryError)
    }
}

#[derive(Debug)]
struct PostgresSetup {
    statement_timeout_ms: u128,
}

impl CustomizeConnection<PgConnection, diesel::r2d2::Error> for PostgresSetup {
    fn on_acquire(&self, conn: &mut PgConnection) -> Result<(), diesel::r2d2::Error> {
        conn.batch_execute(&format!(
            "SET application_name = 'idconsent'; SET statement_timeout = {}; SET TIME ZONE 'UTC';",
            self.statement_timeout_ms
        ))
        .map_err(diesel::r2d2::Error::QueryError)
    }
}

fn open_sqlite(path: &str, options: &DbOptions) -> Result<Pools, OpenError> {
    if let Some(parent) = Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent).map_err(|source| OpenError::Directory {
            path: parent.display().to_string(),
            source,
        })?;
    }
    let busy_timeout_ms = options.busy_timeout.as_millis();
    // The writer first: it creates the file and switches it to WAL before readers open it.
    let write = Pool::builder()
        // A broken connection fails its query, which is reported like any database error;
        // testing every checkout would double the round trips of every request.
        .test_on_check_out(false)
        .max_size(1)
        .connection_timeout(options.acquire_timeout)
        .connection_customizer(Box::new(SqliteSetup {
            busy_timeout_ms,
            read_only: false,
        }))
        .build(ConnectionManager::<SqliteConnection>::new(path))?;
    let read = Pool::builder()
        // A broken connection fails its query, which is reported like any database error;
        // testing every checkout would double the round trips of every request.
        .test_on_check_out(false)
        .max_size(options.max_connections.max(1))
        .min_idle(Some(options.min_idle.min(options.max_connections)))
        .connection_timeout(options.acquire_timeout)
        .connection_customizer(Box::new(SqliteSetup {
            busy_timeout_ms,
            read_only: true,
        }))
        .build(ConnectionManager::<SqliteConnection>::new(path))?;
    Ok(Pools::Sqlite { read, write })
}

fn open_postgres(url: &str, options: &DbOptions) -> Result<Pools, OpenError> {
    let pool = Pool::builder()
        // A broken connection fails its query, which is reported like any database error;
        // testing every checkout would double the round trips of every request.
        .test_on_check_out(false)
        .max_size(options.max_connections.max(1))
        .min_idle(Some(options.min_idle.min(options.max_connections)))
        .connection_timeout(options.acquire_timeout)
        .connection_customizer(Box::new(PostgresSetup {
            statement_timeout_ms: options.statement_timeout.as_millis(),
        }))
        .build(ConnectionManager::<PgConnection>::new(url))?;
    Ok(Pools::Postgres(pool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_name_a_path() {
        assert_eq!(
            sqlite_path("sqlite://data/idconsent.db"),
            Some("data/idconsent.db")
        );
        assert_eq!(sqlite_path("sqlite:///tmp/x.db"), Some("/tmp/x.db"));
        assert_eq!(sqlite_path("sqlite:x.db?mode=rwc"), Some("x.db"));
        assert_eq!(sqlite_path("sqlite://"), None);
        assert_eq!(sqlite_path("postgres://localhost/test"), None);
    }

    #[test]
    fn error_messages_never_show_passwords() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db.internal:5432/idc"),
            "postgres://app:***@db.internal:5432/idc"
        );
        assert_eq!(redact_url("mysql://host/db"), "mysql://host/db");
    }

    #[test]
    fn unknown_schemes_are_refused() {
        let error = Db::open("mysql://root:pw@localhost/db", &DbOptions::default()).unwrap_err();
        assert!(error.to_string().contains("root:***@"), "{error}");
    }
}
