//! Parsers of untrusted bytes: the child processes that read uploaded PDFs, their limits and
//! how many run at once (docs/security.md, "PDF parsing"; ADR 0036).

use std::path::PathBuf;
use std::time::Duration;

use super::ConfigError;

#[derive(Debug, Clone, clap::Args)]
pub struct UntrustedArgs {
    /// The executable run as `<it> untrusted-worker …` to parse uploads (default: this binary).
    #[arg(long, env = "IDC_UNTRUSTED_WORKER", global = true)]
    pub untrusted_worker: Option<PathBuf>,

    /// Memory a parser child may map beyond its size at start, in MiB.
    #[arg(
        long,
        env = "IDC_UNTRUSTED_MEMORY_MIB",
        default_value_t = 512,
        global = true
    )]
    pub untrusted_memory_mib: u64,

    /// Seconds a parser child may take (wall clock, and CPU) before it is killed.
    #[arg(
        long,
        env = "IDC_UNTRUSTED_TIMEOUT_SECONDS",
        default_value_t = 10,
        global = true
    )]
    pub untrusted_timeout_seconds: u64,

    /// Parser children at once in this process.
    #[arg(
        long,
        env = "IDC_UNTRUSTED_PARALLEL",
        default_value_t = 2,
        global = true
    )]
    pub untrusted_parallel: usize,

    /// Seconds a request waits for a free parser before it is answered 503 with Retry-After.
    #[arg(
        long,
        env = "IDC_UNTRUSTED_QUEUE_SECONDS",
        default_value_t = 5,
        global = true
    )]
    pub untrusted_queue_seconds: u64,
}

#[derive(Debug, Clone)]
pub struct UntrustedConfig {
    pub worker: PathBuf,
    pub memory_bytes: u64,
    pub timeout: Duration,
    pub parallel: usize,
    pub queue_wait: Duration,
}

impl UntrustedConfig {
    /// The defaults, with `worker` as the executable (tests point it at their worker binary).
    pub fn with_worker(worker: PathBuf) -> Self {
        Self {
            worker,
            memory_bytes: 512 << 20,
            timeout: Duration::from_secs(10),
            parallel: 2,
            queue_wait: Duration::from_secs(5),
        }
    }
}

impl UntrustedArgs {
    pub fn resolve(self) -> Result<UntrustedConfig, ConfigError> {
        let invalid = |variable: &'static str, reason: &str| ConfigError::Invalid {
            variable,
            reason: reason.into(),
        };
        let worker = match self.untrusted_worker {
            Some(path) => path,
            None => std::env::current_exe().map_err(|error| {
                invalid(
                    "IDC_UNTRUSTED_WORKER",
                    &format!("this binary's path is unknown ({error}): set it"),
                )
            })?,
        };
        if !(64..=65_536).contains(&self.untrusted_memory_mib) {
            return Err(invalid(
                "IDC_UNTRUSTED_MEMORY_MIB",
                "must be between 64 and 65536",
            ));
        }
        if !(1..=600).contains(&self.untrusted_timeout_seconds) {
            return Err(invalid(
                "IDC_UNTRUSTED_TIMEOUT_SECONDS",
                "must be between 1 and 600",
            ));
        }
        if !(1..=256).contains(&self.untrusted_parallel) {
            return Err(invalid(
                "IDC_UNTRUSTED_PARALLEL",
                "must be between 1 and 256",
            ));
        }
        if self.untrusted_queue_seconds > 600 {
            return Err(invalid(
                "IDC_UNTRUSTED_QUEUE_SECONDS",
                "must be at most 600",
            ));
        }
        Ok(UntrustedConfig {
            worker,
            memory_bytes: self.untrusted_memory_mib << 20,
            timeout: Duration::from_secs(self.untrusted_timeout_seconds),
            parallel: self.untrusted_parallel,
            queue_wait: Duration::from_secs(self.untrusted_queue_seconds),
        })
    }
}
