/// mimalloc rather than glibc's malloc: a request allocates many small, short-lived buffers,
/// and glibc's allocator was 12 % of the server's time under load (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    idconsent_server::cli::main()
}
