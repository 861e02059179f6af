//! Group commit on PostgreSQL for the calls of one hot kind (ADR 0035): the calls that arrive
//! together go to the database as one statement — one round trip, one transaction, one WAL
//! flush — instead of one each. The SQLite writer does the same for every write (ADR 0007).

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

use diesel::PgConnection;

use super::{PgPool, not_committed};
use crate::error::DbError;

/// Runs one batch: the items in arrival order, answered in the same order, one answer each.
pub(crate) type RunBatch<I, O> =
    dyn Fn(&mut PgConnection, Vec<I>) -> Result<Vec<O>, DbError> + Send + Sync;

struct Waiting<I, O> {
    item: I,
    reply: tokio::sync::oneshot::Sender<Result<O, DbError>>,
}

/// A thread that takes every call waiting when it is free (up to `max`) and runs them as one
/// batch on one pooled connection, then answers each caller. A batch fails or succeeds as a
/// whole: the statement it runs is atomic, so a failed batch wrote nothing.
pub(crate) struct Batcher<I, O> {
    queue: mpsc::Sender<Waiting<I, O>>,
}

impl<I, O> fmt::Debug for Batcher<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Batcher")
    }
}

impl<I: Send + 'static, O: Send + 'static> Batcher<I, O> {
    pub(super) fn start(
        name: &str,
        pool: PgPool,
        max: usize,
        run: Box<RunBatch<I, O>>,
    ) -> std::io::Result<Self> {
        let (queue, waiting) = mpsc::channel::<Waiting<I, O>>();
        std::thread::Builder::new()
            .name(format!("idc-pg-{name}"))
            .spawn(move || {
                // Ends when the last handle, and with it the sender, is dropped.
                while let Ok(first) = waiting.recv() {
                    let mut batch = Vec::with_capacity(16);
                    batch.push(first);
                    // As the SQLite writer: let the threads about to call do so first.
                    std::thread::yield_now();
                    batch.extend(waiting.try_iter().take(max.max(1) - 1));
                    run_batch(&pool, &*run, batch);
                }
            })?;
        Ok(Self { queue })
    }

    /// Runs `item` in the next batch and returns its answer once the batch is committed.
    pub(crate) async fn call(&self, item: I) -> Result<O, DbError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.queue
            .send(Waiting { item, reply })
            .map_err(|_| DbError::Task)?;
        answer.await.map_err(|_| DbError::Task)?
    }
}

fn run_batch<I, O>(pool: &PgPool, run: &RunBatch<I, O>, batch: Vec<Waiting<I, O>>) {
    let (items, replies): (Vec<I>, Vec<_>) = batch.into_iter().map(|w| (w.item, w.reply)).unzip();
    let calls = items.len();
    let answers = pool.get().map_err(DbError::from).and_then(|mut conn| {
        // A panicking batch is an error for its callers, not a dead thread.
        std::panic::catch_unwind(AssertUnwindSafe(|| run(&mut conn, items)))
            .unwrap_or(Err(DbError::Task))
    });
    match answers {
        Ok(answers) if answers.len() == calls => {
            for (reply, answer) in replies.into_iter().zip(answers) {
                let _ = reply.send(Ok(answer));
            }
        }
        Ok(answers) => {
            tracing::error!(calls, answers = answers.len(), "a batch answered wrongly");
            for reply in replies {
                let _ = reply.send(Err(DbError::Task));
            }
        }
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(not_committed(&error)));
            }
        }
    }
}
