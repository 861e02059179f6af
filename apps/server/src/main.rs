/// mimalloc, returning freed memory at once (crates/allocator; docs/performance.md, "memory").
#[global_allocator]
static ALLOCATOR: idconsent_allocator::MiMalloc = idconsent_allocator::MiMalloc;

fn main() -> std::process::ExitCode {
    idconsent_allocator::return_freed_memory_promptly();
    idconsent_server::cli::main()
}
