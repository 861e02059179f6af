//! The parent side: a bounded pool of child processes.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use crate::{CHILD_ENVIRONMENT, PING, SUBCOMMAND};

/// How much of a child's stderr is kept for the log.
const STDERR_KEPT: u64 = 2048;

#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// The executable that runs `untrusted-worker` (the server's own binary by default).
    pub worker: PathBuf,
    /// Address space a child may map beyond its size at start, in bytes.
    pub memory_bytes: u64,
    /// Wall-clock time from start to answer; also the child's CPU-time limit.
    pub timeout: Duration,
    /// Children at once, across every caller.
    pub parallel: usize,
    /// How long a caller waits for a free child before [`RunError::Busy`].
    pub queue_wait: Duration,
    /// The longest answer read from a child.
    pub max_answer_bytes: usize,
}

/// Why a run gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Every child slot stayed taken for the whole queue wait.
    #[error("every worker stayed busy for {waited:?}")]
    Busy {
        waited: Duration,
        retry_after: Duration,
    },
    /// The child hit its address-space limit (the input needs more memory than allowed).
    #[error("the worker ran out of memory ({limit_bytes} bytes beyond its start)")]
    OutOfMemory { limit_bytes: u64 },
    /// The child used its time: killed at the wall-clock deadline or by its CPU limit.
    #[error("the worker did not answer within {0:?}")]
    TimedOut(Duration),
    /// The child ended without an answer for another reason (a crash, a panic, a bad frame).
    #[error("the worker failed: {0}")]
    Crashed(String),
    /// The child's answer was longer than allowed.
    #[error("the worker's answer is over {0} bytes")]
    AnswerTooLarge(usize),
    /// The worker could not be started or talked to: a deployment fault, not the input's.
    #[error("the worker {path} could not be run: {reason}")]
    Unavailable { path: String, reason: String },
}

impl RunError {
    /// Whether the input is to blame (a hostile or too complex input), as opposed to the pool
    /// being full or the worker missing.
    pub fn is_input_fault(&self) -> bool {
        matches!(
            self,
            Self::OutOfMemory { .. }
                | Self::TimedOut(_)
                | Self::Crashed(_)
                | Self::AnswerTooLarge(_)
        )
    }

    /// The limit or fault it was, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Busy { .. } => "busy",
            Self::OutOfMemory { .. } => "memory",
            Self::TimedOut(_) => "time",
            Self::Crashed(_) => "crash",
            Self::AnswerTooLarge(_) => "answer_size",
            Self::Unavailable { .. } => "unavailable",
        }
    }
}

/// Runs jobs in child processes, at most `parallel` at once.
#[derive(Debug, Clone)]
pub struct ChildPool {
    settings: Arc<PoolSettings>,
    permits: Arc<Semaphore>,
}

impl ChildPool {
    pub fn new(settings: PoolSettings) -> Self {
        let permits = Arc::new(Semaphore::new(settings.parallel.max(1)));
        Self {
            settings: Arc::new(settings),
            permits,
        }
    }

    /// Children that could start now.
    pub fn free_slots(&self) -> usize {
        self.permits.available_permits()
    }

    pub fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    /// Runs the worker's `ping` job once: start-up fails early, with the path, when the
    /// configured worker cannot run jobs.
    pub async fn check(&self) -> Result<(), RunError> {
        let answer = self.run(PING, &[]).await?;
        if answer == b"pong" {
            Ok(())
        } else {
            Err(self.unavailable("it does not answer as an untrusted-worker"))
        }
    }

    /// Runs `job` on the concatenation of `input`, and returns what the child wrote to stdout
    /// once it exited successfully.
    pub async fn run(&self, job: &str, input: &[&[u8]]) -> Result<Vec<u8>, RunError> {
        let waiting = Instant::now();
        let wait = self.settings.queue_wait;
        let _permit = match tokio::time::timeout(wait, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(self.unavailable("the pool is closed")),
            Err(_) => {
                return Err(RunError::Busy {
                    waited: waiting.elapsed(),
                    retry_after: self.settings.timeout,
                });
            }
        };
        let started = Instant::now();
        let outcome = self.spawn_and_wait(job, input).await;
        if let Err(error) = &outcome {
            tracing::warn!(
                untrusted.job = job,
                untrusted.limit = error.kind(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "untrusted input refused: {error}"
            );
        }
        outcome
    }

    async fn spawn_and_wait(&self, job: &str, input: &[&[u8]]) -> Result<Vec<u8>, RunError> {
        let settings = &self.settings;
        let mut child = Command::new(&settings.worker)
            .arg(SUBCOMMAND)
            .arg(job)
            .arg(settings.memory_bytes.to_string())
            .arg(settings.timeout.as_secs().max(1).to_string())
            // Nothing of the parent's environment (its secrets above all) reaches the child.
            .env_clear()
            .envs(CHILD_ENVIRONMENT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| self.unavailable(&error.to_string()))?;
        let deadline = settings.timeout;
        match tokio::time::timeout(deadline, self.talk(&mut child, input)).await {
            Ok(result) => result,
            Err(_) => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                Err(RunError::TimedOut(deadline))
            }
        }
    }

    /// Feeds the input while reading the answer (a child may answer before reading it all),
    /// then judges the exit.
    async fn talk(&self, child: &mut Child, input: &[&[u8]]) -> Result<Vec<u8>, RunError> {
        let missing = |what: &str| self.unavailable(&format!("no {what} pipe"));
        let mut stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let feed = async move {
            for part in input {
                // A child that died early closes its stdin: its exit status says why.
                if stdin.write_all(part).await.is_err() {
                    return;
                }
            }
            let _ = stdin.shutdown().await;
        };
        let limit = self.settings.max_answer_bytes;
        let read_answer = async move {
            let mut answer = Vec::new();
            let read = stdout.take(limit as u64 + 1).read_to_end(&mut answer).await;
            read.map(|_| answer)
        };
        let read_errors = async move {
            let mut text = Vec::new();
            let _ = stderr.take(STDERR_KEPT).read_to_end(&mut text).await;
            String::from_utf8_lossy(&text).trim().to_owned()
        };
        let ((), answer, errors) = tokio::join!(feed, read_answer, read_errors);
        let answer = answer.map_err(|error| RunError::Crashed(error.to_string()))?;
        if answer.len() > limit {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(RunError::AnswerTooLarge(limit));
        }
        let status = child
            .wait()
            .await
            .map_err(|error| self.unavailable(&error.to_string()))?;
        self.judge(status, &errors)?;
        Ok(answer)
    }

    fn judge(&self, status: ExitStatus, errors: &str) -> Result<(), RunError> {
        use std::os::unix::process::ExitStatusExt;
        if status.success() {
            return Ok(());
        }
        // Rust aborts when an allocation fails; under RLIMIT_AS that is the memory limit.
        if errors.contains("memory allocation of") || errors.contains("out of memory") {
            return Err(RunError::OutOfMemory {
                limit_bytes: self.settings.memory_bytes,
            });
        }
        const SIGKILL: i32 = 9;
        const SIGXCPU: i32 = 24;
        match status.signal() {
            // SIGKILL: the CPU limit's hard edge (the wall-clock kill is judged before this),
            // or the kernel's OOM killer, which the address-space limit should make rare.
            Some(SIGXCPU) | Some(SIGKILL) => Err(RunError::TimedOut(self.settings.timeout)),
            Some(signal) => Err(RunError::Crashed(format!("signal {signal}: {errors}"))),
            None if status.code() == Some(i32::from(crate::worker::NOT_A_WORKER)) => {
                Err(self.unavailable(errors))
            }
            None => Err(RunError::Crashed(format!("{status}: {errors}"))),
        }
    }

    fn unavailable(&self, reason: &str) -> RunError {
        RunError::Unavailable {
            path: self.settings.worker.display().to_string(),
            reason: reason.to_owned(),
        }
    }
}
