fn main() -> std::process::ExitCode {
    idconsent_server::cli::main()
}
