//! The e2e servers' PDF parser child (ADR 0036). The servers run inside the test binary, whose
//! `main` is the test harness, so they spawn this instead of `current_exe`: the same entry
//! point as `idconsent untrusted-worker`, with the same allocator.

#[global_allocator]
static ALLOCATOR: idconsent_allocator::MiMalloc = idconsent_allocator::MiMalloc;

fn main() -> std::process::ExitCode {
    idconsent_allocator::return_freed_memory_promptly();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    idconsent_server::cli::untrusted_worker(&args)
}
