#![doc = include_str!("../README.md")]

mod pool;
pub mod worker;

pub use pool::{ChildPool, PoolSettings, RunError};

/// The first argument that makes a worker executable a worker.
pub const SUBCOMMAND: &str = "untrusted-worker";

/// The whole environment of a child. The allocator's address-space reservation instead of
/// mimalloc's 1 GiB: what it reserved before the limit was set is usable beyond the limit, so it
/// must be small. One thread for a math library linked into the executable (OpenBLAS with the
/// server's `faces` feature), which would otherwise start one per core before `main`.
pub const CHILD_ENVIRONMENT: [(&str, &str); 2] = [
    ("MIMALLOC_ARENA_RESERVE", "32MiB"),
    ("OPENBLAS_NUM_THREADS", "1"),
];

/// One kind of work a child does: its name on the command line, and the function from the
/// input (all of stdin) to the answer (all of stdout). `Err` is a broken input frame (a caller
/// bug), never a verdict on untrusted bytes: jobs put their verdicts in the answer.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub name: &'static str,
    pub run: fn(&[u8]) -> Result<Vec<u8>, String>,
}

/// The job every worker answers, whatever its table: the pool's start-up check.
pub const PING: &str = "ping";
