//! Background WAL checkpoints for SQLite.
//!
//! A checkpoint copies the pages that commits appended to the write-ahead log back into the
//! database file and syncs both. Left to SQLite's automatic checkpoint, it runs inside whichever
//! commit crosses the threshold, that is on the writer thread, and every write of the process
//! waits for its copies and its two `fsync`s (tens of milliseconds under load). Here a thread of
//! its own, with its own connection, runs `PRAGMA wal_checkpoint(PASSIVE)`, which blocks neither
//! the writer nor the readers, once enough writes have been committed or a moment after the
//! last one; the writer's automatic checkpoint is off.
//!
//! Under sustained writes a passive checkpoint never quite finishes (frames keep arriving while
//! it copies), and the log only starts over from its beginning after one that did. So once the
//! log is past [`CATCH_UP_AT_PAGES`], the writer is asked to checkpoint between two groups: with
//! most frames already copied, it only copies the last few and syncs, and its next transaction
//! starts the log over.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use diesel::r2d2::{ConnectionManager, Pool};
use diesel::sql_types::Integer;
use diesel::{QueryableByName, RunQueryDsl, SqliteConnection};

/// Committed writes after which the background checkpoint runs.
const WRITES_PER_CHECKPOINT: u64 = 1_000;
/// How soon after the last write a quieter database is checkpointed anyway.
const IDLE_CHECKPOINT_AFTER: Duration = Duration::from_millis(500);
/// How often the thread looks at the write count.
const POLL: Duration = Duration::from_millis(50);
/// The log size (pages of 4 KiB) from which the writer finishes a checkpoint itself.
const CATCH_UP_AT_PAGES: i32 = 16_000;
/// A checkpoint this quick left only a few frames for the writer to copy.
const QUICK_CHECKPOINT: Duration = Duration::from_millis(2);

/// What the writer and the checkpoint thread share; the thread ends when this is dropped.
#[derive(Debug, Default)]
pub(super) struct Checkpoints {
    committed_writes: AtomicU64,
    writer_should_catch_up: AtomicBool,
}

impl Checkpoints {
    /// The writer committed (or tried to commit) `writes` more writes.
    pub(super) fn committed(&self, writes: usize) {
        self.committed_writes
            .fetch_add(writes as u64, Ordering::Relaxed);
    }

    /// On the writer thread, between two groups: finishes the checkpoint if asked to, so that
    /// the log starts over with the next transaction.
    pub(super) fn catch_up_if_asked(&self, writer: &Pool<ConnectionManager<SqliteConnection>>) {
        if self.writer_should_catch_up.swap(false, Ordering::Relaxed) {
            let started = Instant::now();
            match run_checkpoint(writer) {
                Ok(result) => result.log("writer's WAL checkpoint", started),
                Err(error) => tracing::warn!(%error, "writer's WAL checkpoint failed"),
            }
        }
    }
}

#[derive(QueryableByName)]
struct CheckpointResult {
    #[diesel(sql_type = Integer)]
    busy: i32,
    #[diesel(sql_type = Integer)]
    log: i32,
    #[diesel(sql_type = Integer)]
    checkpointed: i32,
}

impl CheckpointResult {
    fn log(&self, what: &'static str, started: Instant) {
        tracing::debug!(
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            busy = self.busy,
            log_pages = self.log,
            checkpointed_pages = self.checkpointed,
            "{what}"
        );
    }
}

fn run_checkpoint(
    pool: &Pool<ConnectionManager<SqliteConnection>>,
) -> Result<CheckpointResult, String> {
    let mut conn = pool.get().map_err(|error| error.to_string())?;
    diesel::sql_query("PRAGMA wal_checkpoint(PASSIVE)")
        .get_result(&mut *conn)
        .map_err(|error| error.to_string())
}

/// Starts the checkpoint thread on `pool` (one read-write connection of its own).
pub(super) fn start(
    pool: Pool<ConnectionManager<SqliteConnection>>,
) -> std::io::Result<Arc<Checkpoints>> {
    let shared = Arc::new(Checkpoints::default());
    let watched = Arc::downgrade(&shared);
    std::thread::Builder::new()
        .name("idc-sqlite-checkpoint".into())
        .spawn(move || run(&pool, &watched))?;
    Ok(shared)
}

fn run(pool: &Pool<ConnectionManager<SqliteConnection>>, watched: &Weak<Checkpoints>) {
    let mut checkpointed_at_write = 0;
    let mut last_change = (0, Instant::now());
    loop {
        std::thread::sleep(POLL);
        // The database handle is gone: so is the reason to checkpoint.
        let Some(shared) = watched.upgrade() else {
            return;
        };
        let committed = shared.committed_writes.load(Ordering::Relaxed);
        if committed != last_change.0 {
            last_change = (committed, Instant::now());
        }
        let pending = committed - checkpointed_at_write;
        let due = pending >= WRITES_PER_CHECKPOINT
            || (pending > 0 && last_change.1.elapsed() >= IDLE_CHECKPOINT_AFTER);
        if !due {
            continue;
        }
        let started = Instant::now();
        match run_checkpoint(pool) {
            Ok(result) => {
                checkpointed_at_write = committed;
                result.log("WAL checkpoint", started);
                if result.log >= CATCH_UP_AT_PAGES {
                    converge(pool);
                    shared.writer_should_catch_up.store(true, Ordering::Relaxed);
                }
            }
            // Nothing is lost: the next round does it.
            Err(error) => tracing::warn!(%error, "WAL checkpoint failed"),
        }
    }
}

/// Checkpoints again while each pass still had real work (frames that arrived during the last
/// one), so that the writer's final pass, which every write waits for, copies only a few.
fn converge(pool: &Pool<ConnectionManager<SqliteConnection>>) {
    for _ in 0..4 {
        let started = Instant::now();
        match run_checkpoint(pool) {
            Ok(result) => result.log("WAL checkpoint (converging)", started),
            Err(_) => return,
        }
        if started.elapsed() < QUICK_CHECKPOINT {
            return;
        }
    }
}
