//! The pool and the worker end to end: this binary is both the tests and the worker they
//! spawn (`current_exe`), with the server's allocator, as the `idconsent` binary is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use idconsent_untrusted::{ChildPool, Job, PoolSettings, RunError, worker};

#[global_allocator]
static ALLOCATOR: idconsent_allocator::MiMalloc = idconsent_allocator::MiMalloc;

const MIB: usize = 1 << 20;

const JOBS: &[Job] = &[
    Job {
        name: "echo",
        run: |input| Ok(input.to_vec()),
    },
    Job {
        name: "allocate",
        run: allocate,
    },
    Job {
        name: "spin",
        run: spin,
    },
    Job {
        name: "panic",
        run: |_| panic!("a parser bug"),
    },
    Job {
        name: "flood",
        run: |_| Ok(vec![b'x'; 4 * MIB]),
    },
    Job {
        name: "environment",
        run: environment,
    },
    Job {
        name: "refuse",
        run: |_| Err("a broken frame".into()),
    },
];

/// Allocates and touches the number of MiB its input names, in 1 MiB blocks kept alive.
fn allocate(input: &[u8]) -> Result<Vec<u8>, String> {
    let mib: usize = std::str::from_utf8(input).unwrap().parse().unwrap();
    let blocks: Vec<Vec<u8>> = (0..mib).map(|n| vec![n as u8 | 1; MIB]).collect();
    let touched = blocks.iter().filter(|block| block[MIB - 1] != 0).count();
    Ok(touched.to_string().into_bytes())
}

fn spin(_: &[u8]) -> Result<Vec<u8>, String> {
    let mut n: u64 = 0;
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

fn environment(_: &[u8]) -> Result<Vec<u8>, String> {
    let names: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    Ok(names.join(",").into_bytes())
}

fn pool(memory_mib: u64, timeout: Duration, parallel: usize) -> ChildPool {
    ChildPool::new(PoolSettings {
        worker: std::env::current_exe().unwrap(),
        memory_bytes: memory_mib << 20,
        timeout,
        parallel,
        queue_wait: Duration::from_millis(300),
        max_answer_bytes: MIB,
    })
}

async fn answers_what_the_job_writes() {
    let pool = pool(256, Duration::from_secs(10), 2);
    pool.check().await.unwrap();
    let input = vec![7u8; 3 * MIB / 4];
    let answer = pool.run("echo", &[b"head", &input]).await.unwrap();
    assert_eq!(answer.len(), 4 + input.len());
    assert_eq!(&answer[..4], b"head");
}

async fn memory_within_the_budget_is_allowed_and_beyond_it_refused() {
    let pool = pool(256, Duration::from_secs(20), 1);
    let answer = pool.run("allocate", &[b"192"]).await.unwrap();
    assert_eq!(answer, b"192");
    // 512 MiB against 256: the allocator's own reservation does not stretch the budget.
    let started = Instant::now();
    let refused = pool.run("allocate", &[b"512"]).await.unwrap_err();
    assert!(
        matches!(refused, RunError::OutOfMemory { .. }),
        "{refused:?}"
    );
    assert!(refused.is_input_fault());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

async fn a_child_that_runs_on_is_killed_at_its_deadline() {
    let pool = pool(256, Duration::from_secs(1), 1);
    let started = Instant::now();
    let refused = pool.run("spin", &[]).await.unwrap_err();
    assert!(matches!(refused, RunError::TimedOut(_)), "{refused:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

async fn a_full_pool_answers_busy_after_its_queue_wait() {
    let pool = pool(256, Duration::from_secs(2), 1);
    let spinning = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.run("spin", &[]).await })
    };
    // Once the spinning run holds the only slot, any other run waits its queue time.
    while pool.free_slots() > 0 {
        tokio::task::yield_now().await;
    }
    let waited = Instant::now();
    let busy = pool.run("echo", &[b"x"]).await;
    let busy = busy.unwrap_err();
    assert!(matches!(busy, RunError::Busy { .. }), "{busy:?}");
    assert!(waited.elapsed() >= Duration::from_millis(300));
    assert!(!busy.is_input_fault());
    assert!(matches!(
        spinning.await.unwrap(),
        Err(RunError::TimedOut(_))
    ));
    // Freed: the next run gets a child.
    assert_eq!(pool.run("echo", &[b"x"]).await.unwrap(), b"x");
}

async fn crashes_floods_and_bad_workers_are_told_apart() {
    let pool = pool(256, Duration::from_secs(10), 2);
    let crashed = pool.run("panic", &[]).await.unwrap_err();
    assert!(matches!(crashed, RunError::Crashed(_)), "{crashed:?}");
    let flooded = pool.run("flood", &[]).await.unwrap_err();
    assert!(
        matches!(flooded, RunError::AnswerTooLarge(_)),
        "{flooded:?}"
    );
    let refused = pool.run("refuse", &[]).await.unwrap_err();
    assert!(matches!(refused, RunError::Crashed(ref why) if why.contains("a broken frame")));
    let unknown = pool.run("no-such-job", &[]).await.unwrap_err();
    assert!(
        matches!(unknown, RunError::Unavailable { .. }),
        "{unknown:?}"
    );

    let missing = ChildPool::new(PoolSettings {
        worker: "/nonexistent/idconsent".into(),
        ..pool.settings().clone()
    });
    let error = missing.check().await.unwrap_err();
    assert!(matches!(error, RunError::Unavailable { .. }), "{error:?}");
    assert!(
        error.to_string().contains("/nonexistent/idconsent"),
        "{error}"
    );
}

async fn the_child_inherits_no_environment() {
    let pool = pool(256, Duration::from_secs(10), 1);
    assert!(std::env::var_os("PATH").is_some());
    let names = String::from_utf8(pool.run("environment", &[]).await.unwrap()).unwrap();
    let mut names: Vec<&str> = names.split(',').collect();
    names.sort_unstable();
    assert_eq!(names, ["MIMALLOC_ARENA_RESERVE", "OPENBLAS_NUM_THREADS"]);
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if worker::is_worker_invocation(&args) {
        return worker::main(&args, JOBS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    macro_rules! run {
        ($($test:ident),*) => {$(
            eprint!("test {} ... ", stringify!($test));
            runtime.block_on($test());
            eprintln!("ok");
        )*};
    }
    run!(
        answers_what_the_job_writes,
        memory_within_the_budget_is_allowed_and_beyond_it_refused,
        a_child_that_runs_on_is_killed_at_its_deadline,
        a_full_pool_answers_busy_after_its_queue_wait,
        crashes_floods_and_bad_workers_are_told_apart,
        the_child_inherits_no_environment
    );
    ExitCode::SUCCESS
}
