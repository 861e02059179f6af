/// mimalloc rather than glibc's malloc: a request allocates many small, short-lived buffers,
/// and glibc's allocator was 12 % of the server's time under load. Built without transparent
/// huge pages (`no_thp`): with them, every 2 MiB region the allocator touched stayed resident,
/// 18 MiB more peak RSS under load for no measurable speed (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    idconsent_server::cli::main()
}
