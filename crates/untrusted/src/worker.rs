//! The child side: limit this process, then read the input, run the job, write the answer.
//!
//! Called from a worker executable's `main` before anything else happens there (no runtime,
//! no configuration, no logging): `untrusted-worker <job> <memory bytes> <seconds>`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::ExitCode;

use rustix::process::{Resource, Rlimit, Signal, setrlimit};

use crate::{Job, PING, SUBCOMMAND};

/// The exit code of a worker started wrongly (unknown job, bad arguments, limits that could
/// not be set): the parent reports the deployment, not the input.
pub const NOT_A_WORKER: u8 = 64;
/// The exit code of a job that could not read its input frame.
const BAD_INPUT: u8 = 65;

/// Whether `args` (as from `std::env::args_os()`) ask for a worker.
pub fn is_worker_invocation(args: &[OsString]) -> bool {
    args.get(1).is_some_and(|first| first == SUBCOMMAND)
}

/// Runs the job `args` name, under its limits, and exits.
pub fn main(args: &[OsString], jobs: &[Job]) -> ExitCode {
    let fail = |code: u8, message: &str| {
        let _ = writeln!(std::io::stderr(), "untrusted-worker: {message}");
        ExitCode::from(code)
    };
    let text = |index: usize| args.get(index).and_then(|arg| arg.to_str());
    let (Some(name), Some(memory), Some(seconds)) = (text(2), text(3), text(4)) else {
        return fail(
            NOT_A_WORKER,
            "usage: untrusted-worker <job> <memory bytes> <seconds>",
        );
    };
    let (Ok(memory), Ok(seconds)) = (memory.parse::<u64>(), seconds.parse::<u64>()) else {
        return fail(
            NOT_A_WORKER,
            "the memory and time limits must be whole numbers",
        );
    };
    let job = match jobs.iter().find(|job| job.name == name) {
        Some(job) => job.run,
        None if name == PING => ping,
        None => return fail(NOT_A_WORKER, &format!("no job named {name}")),
    };
    if let Err(error) = limit_self(memory, seconds) {
        return fail(NOT_A_WORKER, &format!("cannot set its limits: {error}"));
    }
    let mut input = Vec::new();
    if let Err(error) = std::io::stdin().lock().read_to_end(&mut input) {
        return fail(BAD_INPUT, &format!("cannot read its input: {error}"));
    }
    let answer = match job(&input) {
        Ok(answer) => answer,
        Err(error) => return fail(BAD_INPUT, &error),
    };
    drop(input);
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(&answer)
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return fail(BAD_INPUT, "cannot write its answer");
    }
    ExitCode::SUCCESS
}

fn ping(_: &[u8]) -> Result<Vec<u8>, String> {
    Ok(b"pong".to_vec())
}

/// The limits, set before a byte of input is read. The address space may grow by `memory`
/// beyond what the process maps now (its executable, libraries, stack and the allocator's
/// first small arena), so the budget means the same whatever the executable's size.
fn limit_self(memory: u64, seconds: u64) -> Result<(), String> {
    // A child whose parent died (killed, crashed) must not run on unobserved. (Linux sends it
    // when the thread that started the child ends: the server starts children from its HTTP
    // worker threads, which live as long as it does.)
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|error| format!("parent-death signal: {error}"))?;
    let mapped = mapped_bytes().ok_or("cannot read /proc/self/status")?;
    let both = |limit: u64| Rlimit {
        current: Some(limit),
        maximum: Some(limit),
    };
    let set = |resource: Resource, limit: Rlimit, what: &str| {
        setrlimit(resource, limit).map_err(|error| format!("{what}: {error}"))
    };
    set(
        Resource::As,
        both(mapped.saturating_add(memory)),
        "RLIMIT_AS",
    )?;
    // SIGXCPU at the soft limit, SIGKILL a second later: the parent's deadline normally
    // comes first; this one holds even if the parent is stuck.
    set(
        Resource::Cpu,
        Rlimit {
            current: Some(seconds),
            maximum: Some(seconds.saturating_add(1)),
        },
        "RLIMIT_CPU",
    )?;
    set(Resource::Core, both(0), "RLIMIT_CORE")?;
    set(Resource::Fsize, both(0), "RLIMIT_FSIZE")?;
    set(Resource::Nproc, both(0), "RLIMIT_NPROC")?;
    Ok(())
}

/// `VmSize` of this process, in bytes.
fn mapped_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}
