//! The `idconsent` command line.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use idconsent_store_diesel::Db;
use secrecy::ExposeSecret;

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

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Merchant accounts and the go-live review.
    #[command(subcommand)]
    Merchants(MerchantCommand),
    /// The ES256 keys that sign OAuth access tokens (in IDC_OAUTH_KEYS_DIR).
    #[command(subcommand)]
    OauthKeys(OauthKeyCommand),
    /// Plans, closing months, invoices.
    #[command(subcommand)]
    Billing(BillingCommand),
}

#[derive(Debug, Subcommand)]
pub enum BillingCommand {
    /// Set a merchant's plan: free, basic, growth or enterprise (custom limits only there).
    Plan {
        merchant: String,
        plan: String,
        /// Enterprise: requests per minute.
        #[arg(long)]
        per_minute: Option<u64>,
        /// Enterprise: requests per UTC day, or `unlimited`.
        #[arg(long)]
        per_day: Option<String>,
        /// Enterprise: requests in flight at once.
        #[arg(long)]
        concurrent: Option<u64>,
    },
    /// Issue every merchant's invoice for a month that has ended (YYYY-MM); idempotent.
    ClosePeriod { period: String },
    /// Mark an invoice paid.
    MarkPaid { invoice: String },
}

#[derive(Debug, Subcommand)]
pub enum OauthKeyCommand {
    /// Add a new signing key: every server publishes it within the reload interval and signs
    /// with it after `IDC_OAUTH_KEY_ACTIVATION_SECONDS`; the previous key keeps verifying (and
    /// stays in the JWKS) until its last token expires. No restart needed.
    Rotate,
    /// The keys in the database: kid, created, signing from, retired.
    List,
}

#[derive(Debug, Subcommand)]
pub enum MerchantCommand {
    /// List merchants, newest first.
    List {
        /// onboarding, in_review, live or rejected
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 1)]
        page: i64,
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Approve a merchant in review: live keys for every application.
    Approve { id: String },
    /// Reject a merchant in review with a reason that is emailed to them.
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
    },
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
