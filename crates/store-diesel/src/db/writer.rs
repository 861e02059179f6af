//! The SQLite writer thread and its group commit (ADR 0007).

use std::sync::Arc;
use std::time::Duration;

use diesel::SqliteConnection;

use super::{AnyConnection, SqlitePool, checkpoint, not_committed};
use crate::error::DbError;

/// The SQLite writer: one thread owning the write connection, committing in groups.
///
/// SQLite serialises writers, so concurrent write transactions only queue for its lock; each
/// also pays a thread hop, `BEGIN IMMEDIATE`, and a commit that appends every page it touched
/// to the WAL. The writer thread takes every write waiting when it is free (up to
/// [`Writer::MAX_GROUP`]) and runs them in one transaction, each inside a savepoint of its own:
/// a write whose closure fails is rolled back alone, the others commit together, and every
/// caller hears its outcome only after the commit. Under load a group shares one lock, one
/// commit and one wake-up; a write alone costs two extra statements (savepoint, release).
///
/// A closure error that may have ended SQLite's transaction (an I/O error, a full disk, a
/// panic) fails the whole group instead: nothing of it is committed, every caller gets an error.
#[derive(Clone)]
pub(super) struct Writer {
    queue: std::sync::mpsc::Sender<Box<dyn PendingWrite>>,
}

/// A write waiting for the writer thread.
trait PendingWrite: Send {
    /// Runs the closure, inside a savepoint of its own when it shares the transaction; the
    /// caller is told later, by `Ran::report`.
    fn run(self: Box<Self>, conn: &mut SqliteConnection, alone: bool) -> Ran;
    /// Tells the caller the write could not be run.
    fn fail(self: Box<Self>, error: &DbError);
}

struct Ran {
    /// The write failed in a way that may have ended the transaction.
    poisons_group: bool,
    /// Called with the group's failure, or `None` once committed.
    report: Report,
}

type Report = Box<dyn FnOnce(Option<&DbError>) + Send>;

struct Write<T, F> {
    f: F,
    reply: tokio::sync::oneshot::Sender<Result<T, DbError>>,
    span: tracing::Span,
}

impl<T, F> PendingWrite for Write<T, F>
where
    T: Send + 'static,
    F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
{
    fn run(self: Box<Self>, conn: &mut SqliteConnection, alone: bool) -> Ran {
        let Write { f, reply, span } = *self;
        let outcome = span.in_scope(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if alone {
                    f(AnyConnection::Sqlite(conn))
                } else {
                    in_savepoint(conn, f)
                }
            }))
        });
        let (outcome, poisons_group) = match outcome {
            // Alone, a failure rolls back the group's (its own) transaction.
            Ok(outcome) if alone => {
                let failed = outcome.is_err();
                (outcome, failed)
            }
            Ok(outcome) => {
                let poisons = outcome.as_ref().err().is_some_and(poisons_group);
                (outcome, poisons)
            }
            // Its savepoint is still open: the group is rolled back as a whole.
            Err(_) => (Err(DbError::Task), true),
        };
        Ran {
            poisons_group,
            report: Box::new(move |failure| {
                let result = match (outcome, failure) {
                    (Ok(_), Some(failure)) => Err(not_committed(failure)),
                    (outcome, _) => outcome,
                };
                let _ = reply.send(result);
            }),
        }
    }

    fn fail(self: Box<Self>, error: &DbError) {
        let _ = self.reply.send(Err(not_committed(error)));
    }
}

impl Writer {
    /// Writes committed together at most.
    const MAX_GROUP: usize = 64;
    /// A group taking longer than this is logged (at debug): every writer waited for it.
    const SLOW_GROUP: Duration = Duration::from_millis(10);

    pub(super) fn start(
        pool: SqlitePool,
        checkpoints: Arc<checkpoint::Checkpoints>,
    ) -> std::io::Result<Self> {
        let (queue, waiting) = std::sync::mpsc::channel::<Box<dyn PendingWrite>>();
        std::thread::Builder::new()
            .name("idc-sqlite-writer".into())
            .spawn(move || {
                // Ends when the last `Db` clone, and with it the sender, is dropped.
                while let Ok(first) = waiting.recv() {
                    let mut group = Vec::with_capacity(8);
                    group.push(first);
                    // Before committing, let the threads about to queue writes do so: they
                    // often share this core (one pinned server), and a bigger group shares one
                    // `BEGIN … COMMIT`. Yielding costs nothing when nobody else is runnable.
                    std::thread::yield_now();
                    group.extend(waiting.try_iter().take(Self::MAX_GROUP - 1));
                    let writes = group.len();
                    let started = std::time::Instant::now();
                    run_group(&pool, group);
                    checkpoints.committed(writes);
                    if started.elapsed() >= Self::SLOW_GROUP {
                        tracing::debug!(
                            writes,
                            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
                            "slow SQLite write group"
                        );
                    }
                    checkpoints.catch_up_if_asked(&pool);
                }
            })?;
        Ok(Self { queue })
    }

    pub(super) async fn write<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(AnyConnection<'_>) -> Result<T, DbError> + Send + 'static,
    {
        let (reply, outcome) = tokio::sync::oneshot::channel();
        let write = Write {
            f,
            reply,
            span: tracing::Span::current(),
        };
        self.queue
            .send(Box::new(write))
            .map_err(|_| DbError::Task)?;
        outcome.await.map_err(|_| DbError::Task)?
    }
}

/// Runs `f` inside a savepoint of its own: released when `f` returns `Ok`, rolled back (and
/// released) on `Err`.
///
/// diesel's nested `transaction` would do the same with `SAVEPOINT diesel_savepoint_1` sent
/// as text, which SQLite parses anew for every write: in a profile of the consent load test
/// those parses were 6 % of the server's time. These statements are prepared once per
/// connection and cached. diesel's own transaction depth is not touched, so a closure may
/// still open nested transactions of its own.
fn in_savepoint<T>(
    conn: &mut SqliteConnection,
    f: impl FnOnce(AnyConnection<'_>) -> Result<T, DbError>,
) -> Result<T, DbError> {
    use diesel::RunQueryDsl;

    savepoint::Open.execute(conn)?;
    let outcome = f(AnyConnection::Sqlite(conn));
    if outcome.is_err() {
        savepoint::RollBack.execute(conn)?;
    }
    savepoint::Release.execute(conn)?;
    outcome
}

/// The writer's savepoint statements, with static query ids so diesel caches them prepared.
mod savepoint {
    use diesel::query_builder::{AstPass, QueryFragment, QueryId};
    use diesel::sqlite::Sqlite;

    macro_rules! statement {
        ($name:ident, $sql:literal) => {
            #[derive(Debug, Clone, Copy)]
            pub(super) struct $name;

            impl QueryId for $name {
                type QueryId = Self;
                const HAS_STATIC_QUERY_ID: bool = true;
            }

            impl QueryFragment<Sqlite> for $name {
                fn walk_ast<'b>(
                    &'b self,
                    mut out: AstPass<'_, 'b, Sqlite>,
                ) -> diesel::QueryResult<()> {
                    out.push_sql($sql);
                    Ok(())
                }
            }

            impl diesel::RunQueryDsl<diesel::SqliteConnection> for $name {}
        };
    }

    statement!(Open, "SAVEPOINT idc_write");
    statement!(RollBack, "ROLLBACK TO idc_write");
    statement!(Release, "RELEASE idc_write");
}

/// Runs one group of writes in one transaction, then tells each caller.
fn run_group(pool: &SqlitePool, group: Vec<Box<dyn PendingWrite>>) {
    use diesel::connection::{AnsiTransactionManager, TransactionManager};

    let mut conn = match pool.get() {
        Ok(conn) => conn,
        Err(error) => {
            let error = DbError::from(error);
            group.into_iter().for_each(|write| write.fail(&error));
            return;
        }
    };
    let conn: &mut SqliteConnection = &mut conn;
    if let Err(error) = AnsiTransactionManager::begin_transaction_sql(conn, "BEGIN IMMEDIATE") {
        let error = DbError::from(error);
        group.into_iter().for_each(|write| write.fail(&error));
        return;
    }
    let mut ran = Vec::with_capacity(group.len());
    let alone = group.len() == 1;
    let mut group = group.into_iter();
    let mut poisoned = false;
    for write in group.by_ref() {
        let outcome = write.run(conn, alone);
        poisoned = outcome.poisons_group;
        ran.push(outcome);
        if poisoned {
            break;
        }
    }
    let failure = if poisoned {
        // Back to no transaction, whatever depth the failure left (a panic leaves its
        // savepoint open). Should a rollback fail, r2d2 discards the connection.
        while AnsiTransactionManager::transaction_manager_status_mut(conn)
            .transaction_depth()
            .is_ok_and(|depth| depth.is_some())
        {
            if AnsiTransactionManager::rollback_transaction(conn).is_err() {
                break;
            }
        }
        Some(DbError::Rollback("another write of its group failed"))
    } else {
        AnsiTransactionManager::commit_transaction(conn)
            .err()
            .map(DbError::from)
    };
    for outcome in ran {
        (outcome.report)(failure.as_ref());
    }
    if let Some(failure) = &failure {
        group.for_each(|write| write.fail(failure));
    }
}

/// Whether a closure's error may have ended SQLite's transaction, so that later savepoints
/// would run outside it. Constraint violations, "not found", (de)serialisation and a
/// repository's own rollback leave the transaction intact.
fn poisons_group(error: &DbError) -> bool {
    use diesel::result::{DatabaseErrorKind, Error};
    match error {
        DbError::Rollback(_) => false,
        DbError::Query(
            Error::NotFound | Error::DeserializationError(_) | Error::SerializationError(_),
        ) => false,
        DbError::Query(Error::DatabaseError(kind, _)) => !matches!(
            kind,
            DatabaseErrorKind::UniqueViolation
                | DatabaseErrorKind::ForeignKeyViolation
                | DatabaseErrorKind::NotNullViolation
                | DatabaseErrorKind::CheckViolation
        ),
        _ => true,
    }
}
