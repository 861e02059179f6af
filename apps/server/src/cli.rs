//! The `idconsent` command line.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use idconsent_store_diesel::Db;
use secrecy::ExposeSecret;

use crate::admin::AdminCommand;
use crate::config::{Config, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "idconsent",
    version,
    about = "Identity consent and verification service",
    long_about = "Identity consent and verification service.\n\n\
                  Every flag can also be set with its IDC_* environment variable."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub settings: Settings,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Platform operator tasks, the same as the `/v1/admin/…` endpoints.
    #[command(subcommand)]
    Admin(AdminCommand),
}

/// The hidden `untrusted-worker` subcommand (ADR 0036): this binary as a child the server
/// started to parse one upload under limits. Nothing else runs first — no configuration, no
/// logging, no runtime — so the child holds no secret and limits itself before reading input.
pub fn untrusted_worker(args: &[OsString]) -> ExitCode {
    idconsent_untrusted::worker::main(args, idconsent_pdf_sign::JOBS)
}

pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if idconsent_untrusted::worker::is_worker_invocation(&args) {
        return untrusted_worker(&args);
    }
    let cli = Cli::parse_from(args);
    let config = match cli.settings.resolve() {
        Ok(config) => config,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "idconsent: {error}");
            return ExitCode::from(2);
        }
    };
    let _log = crate::telemetry::init(config.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = writeln!(
                std::io::stderr(),
                "idconsent: cannot start the runtime: {error}"
            );
            return ExitCode::FAILURE;
        }
    };
    let outcome = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => runtime.block_on(serve(config)),
        Command::Migrate => migrate(&config),
        Command::Admin(command) => runtime.block_on(crate::admin::run(config, command)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error}");
            let _ = writeln!(std::io::stderr(), "idconsent: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> Result<(), String> {
    let server = crate::server::start(config)
        .await
        .map_err(|e| e.to_string())?;
    server.wait().await;
    Ok(())
}

fn migrate(config: &Config) -> Result<(), String> {
    let db =
        Db::open(config.database_url.expose_secret(), &config.db).map_err(|e| e.to_string())?;
    let applied = db.migrate().map_err(|e| e.to_string())?;
    let mut out = std::io::stdout();
    if applied.is_empty() {
        let _ = writeln!(out, "database is up to date ({})", db.backend().as_str());
    }
    for name in applied {
        let _ = writeln!(out, "applied {name}");
    }
    Ok(())
}
