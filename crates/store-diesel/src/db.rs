use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool};
use diesel::{Connection, PgConnection, SqliteConnection};

use crate::error::{DbError, OpenError};

mod batch;
mod checkpoint;
mod locked;
mod writer;

use writer::Writer;

pub(crate) use batch::{Batcher, RunBatch};

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
    /// SQLite: run a read on the calling thread when a read connection is idle, instead of
    /// hopping to the blocking pool (see [`Db::read`]).
    pub sqlite_inline_reads: bool,
}

impl Default for DbOptions {
    fn default() -> Self {
        Self {
            max_connections: 16,
            min_idle: 2,
            acquire_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(30),
            busy_timeout: Duration::from_secs(5),
            sqlite_inline_reads: true,
        }
    }
}

type SqlitePool = Pool<ConnectionManager<SqliteConnection>>;
type PgPool = Pool<ConnectionManager<PgConnection>>;

enum Pools {
    Sqlite {
        read: SqlitePool,
        write: SqlitePool,
        writer: Writer,
        inline_reads: bool,
    },
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

    /// Runs `f` with a read connection. Single statements are atomic; wrap several in
    /// `conn.transaction` when they must see one snapshot.
    ///
    /// On PostgreSQL, and on SQLite when no connection is idle, `f` runs on tokio's blocking
    /// pool. On SQLite with an idle connection (and [`DbOptions::sqlite_inline_reads`]) it runs
    /// right here on the calling thread: a SQLite read is a local, mostly in-memory lookup that
    /// never waits for the writer in WAL mode, and costs less than the two thread switches of
    /// the hop (docs/performance.md). The price: a slow read (an unindexed scan, a large count)
    /// holds up the other requests of this worker thread while it runs.
    ///
    /// On SQLite the writer's own connection is preferred while no write group holds it: it
    /// sees exactly what is committed (its groups are over) with a warm page cache, while a
    /// read connection re-reads every page after each commit of the writer. `f` must not
    /// write; on the read connections `query_only` enforces it.
    pub async fn read<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        if let Pools::Sqlite {
            read,
            write,
            inline_reads: true,
            ..
        } = &*self.pools
        {
            // The writer's connection first, when no write group holds it: its page cache is
            // current, whereas a read connection drops its whole cache whenever the writer has
            // committed since that connection's last read.
            if let Some(mut conn) = write.try_get()
                && !in_transaction(&mut conn)
            {
                return read_on_writer_connection(&mut conn, f);
            }
            if let Some(mut conn) = read.try_get() {
                // As on the blocking pool, a panicking query is an error, not a dead worker.
                return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    f(AnyConnection::Sqlite(&mut conn))
                }))
                .unwrap_or(Err(DbError::Task));
            }
        }
        let pools = self.pools.clone();
        run_blocking(move || match &*pools {
            Pools::Sqlite { read, .. } => f(AnyConnection::Sqlite(&mut *read.get()?)),
            Pools::Postgres(pool) => f(AnyConnection::Postgres(&mut *pool.get()?)),
        })
        .await
    }

    /// Like [`Db::read`], but always on the blocking pool: for reads that copy megabytes (blobs),
    /// which must not hold an async worker thread even for the milliseconds that takes.
    pub async fn read_off_thread<T, F>(&self, f: F) -> Result<T, DbError>
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

    /// Runs `f` in a write transaction: committed when `f` returns `Ok`, rolled back on `Err`,
    /// and the result returned only once the commit is done.
    ///
    /// On PostgreSQL it runs on the blocking pool in a transaction of its own. On SQLite, which
    /// has one writer anyway, it runs on the writer thread with group commit (see [`Writer`]):
    /// writes that arrive together share one `BEGIN IMMEDIATE … COMMIT`, each in a savepoint of
    /// its own, so a failing `f` undoes only its own changes.
    pub async fn write<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        self.run_write(f, PgTransaction::Own).await
    }

    /// Runs `f`, a write whose statements each leave the data consistent on their own (a single
    /// statement, or one write followed by reads), without a transaction of its own on
    /// PostgreSQL: each statement commits by itself, which saves the `BEGIN` and `COMMIT` round
    /// trips (two of three for a single statement). On SQLite it is [`Db::write`], in the
    /// writer's group commit.
    ///
    /// Should `f` fail after a statement, that statement stays committed: use it only where
    /// that is as good as a process dying at that moment (a lease that then lapses).
    pub async fn write_autocommit<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        self.run_write(f, PgTransaction::None).await
    }

    /// Runs `f` in a write transaction that holds the advisory lock of `key` from its start
    /// (see [`crate::repo::advisory_lock`]); on PostgreSQL `BEGIN` and the lock take one round
    /// trip. On SQLite it is [`Db::write`]: the single writer already serialises.
    pub async fn write_locked<T, F>(&self, key: String, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        self.run_write(f, PgTransaction::Locked(key)).await
    }

    async fn run_write<T, F>(&self, f: F, transaction: PgTransaction) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        match &*self.pools {
            Pools::Sqlite { writer, .. } => writer.write(f).await,
            Pools::Postgres(pool) => {
                let pool = pool.clone();
                run_blocking(move || {
                    let mut conn = pool.get()?;
                    match transaction {
                        PgTransaction::Own => conn.transaction(|c| f(AnyConnection::Postgres(c))),
                        PgTransaction::None => f(AnyConnection::Postgres(&mut conn)),
                        PgTransaction::Locked(key) => {
                            locked::transaction(&mut conn, &key, |c| f(AnyConnection::Postgres(c)))
                        }
                    }
                })
                .await
            }
        }
    }

    /// On PostgreSQL, a [`Batcher`] that runs the calls of one kind arriving together as one
    /// `run` (one statement, one commit); `None` on SQLite, whose writer already commits in
    /// groups, or when its thread cannot start (the caller then runs each call alone).
    pub(crate) fn batcher<I: Send + 'static, O: Send + 'static>(
        &self,
        name: &str,
        max: usize,
        run: Box<RunBatch<I, O>>,
    ) -> Option<Batcher<I, O>> {
        let Pools::Postgres(pool) = &*self.pools else {
            return None;
        };
        Batcher::start(name, pool.clone(), max, run)
            .inspect_err(|error| tracing::warn!(%error, name, "batch thread did not start"))
            .ok()
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

/// Whether a write on PostgreSQL runs in a transaction of its own ([`Db::write`]) or
/// statement by statement ([`Db::write_autocommit`]).
#[derive(Debug, Clone)]
enum PgTransaction {
    Own,
    None,
    /// Its own, holding this advisory lock from the start.
    Locked(String),
}

/// The error of a write whose group was not committed.
fn not_committed(failure: &DbError) -> DbError {
    if let DbError::Unreachable(unavailable) = failure {
        return DbError::Unreachable(unavailable.clone());
    }
    DbError::Query(diesel::result::Error::DatabaseError(
        diesel::result::DatabaseErrorKind::Unknown,
        Box::new(format!("the write was not committed: {failure}")),
    ))
}

/// Whether `conn` has a transaction open (a write group, or one a failed commit left behind).
fn in_transaction(conn: &mut SqliteConnection) -> bool {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    AnsiTransactionManager::transaction_manager_status_mut(conn)
        .transaction_depth()
        .map_or(true, |depth| depth.is_some())
}

/// A read on the writer's idle connection, between two write groups. Whatever the closure
/// does, the connection goes back with no transaction open: a panic inside `conn.transaction`
/// would otherwise leave one for the writer's next group.
fn read_on_writer_connection<T>(
    conn: &mut SqliteConnection,
    f: impl FnOnce(AnyConnection<'_>) -> Result<T, DbError>,
) -> Result<T, DbError> {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f(AnyConnection::Sqlite(conn))
    }));
    while in_transaction(conn) {
        if AnsiTransactionManager::rollback_transaction(conn).is_err() {
            break;
        }
    }
    outcome.unwrap_or(Err(DbError::Task))
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

/// Page cache of a read connection, in KiB. It is dropped whenever the writer has committed
/// since the connection's last read, and dropping it walks all of it: small is cheaper.
const READ_CACHE_KIB: u32 = 2_000;
/// Page cache of the writer's connection, in KiB. It stays valid (only the writer writes) and
/// also serves reads between write groups, but it is not free to make large: a B-tree rebalance
/// renumbers pages through the lock-byte page (number 262,145 with 4 KiB pages), and the next
/// commit then walks the whole cache to drop pages "beyond the end of the file". With 16 MB that
/// walk cost more than the page reads it saved (docs/performance.md).
const WRITE_CACHE_KIB: u32 = 4_000;

#[derive(Debug)]
struct SqliteSetup {
    busy_timeout_ms: u128,
    read_only: bool,
}

impl CustomizeConnection<SqliteConnection, diesel::r2d2::Error> for SqliteSetup {
    fn on_acquire(&self, conn: &mut SqliteConnection) -> Result<(), diesel::r2d2::Error> {
        // WAL lets readers proceed while the writer writes; NORMAL sync is durable across
        // application crashes (a power loss may drop the last transactions, never corrupt).
        // Checkpoints run on a thread of their own, not in the writer's commits (see
        // `checkpoint`). No mmap: the file grows with every checkpoint, and each
        // growth made every read connection unmap and fault its pages in again, which cost
        // more than the copies it saves (docs/performance.md).
        let mut pragmas = format!(
            "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -{}; \
             PRAGMA wal_autocheckpoint = 0;",
            self.busy_timeout_ms,
            if self.read_only {
                READ_CACHE_KIB
            } else {
                WRITE_CACHE_KIB
            },
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
    let write_connection = || {
        Pool::builder()
            // A broken connection fails its query, which is reported like any database error;
            // testing every checkout would double the round trips of every request.
            .test_on_check_out(false)
            .max_size(1)
            .connection_timeout(options.acquire_timeout)
            .connection_customizer(Box::new(SqliteSetup {
                busy_timeout_ms,
                read_only: false,
            }))
            .build(ConnectionManager::<SqliteConnection>::new(path))
    };
    let write = write_connection()?;
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
    // Checkpoints run on a read-write connection of their own, beside the writer's.
    let checkpoints = write_connection()?;
    let thread_failed = |error: std::io::Error| {
        tracing::error!(%error, "cannot start a SQLite background thread");
        OpenError::Db(DbError::Task)
    };
    let checkpoints = checkpoint::start(checkpoints).map_err(thread_failed)?;
    let writer = Writer::start(write.clone(), checkpoints).map_err(thread_failed)?;
    Ok(Pools::Sqlite {
        read,
        write,
        writer,
        inline_reads: options.sqlite_inline_reads,
    })
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
mod tests;
