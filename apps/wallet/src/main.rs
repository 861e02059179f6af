#![doc = include_str!("../README.md")]

/// `println!` that ends the program quietly when standard output is gone (`| head`), as a
/// command-line tool killed by SIGPIPE would, instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

mod api;
mod app;
mod commitment;
mod listen;
mod qr;
mod state;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

use crate::api::Api;
use crate::app::{Enroll, Otp};
use crate::state::{DEFAULT_ORIGIN, DEFAULT_SERVER, Wallet};

#[derive(Debug, Parser)]
#[command(
    name = "idconsent-wallet",
    version,
    about = "Plays the idconsent mobile app with a software passkey kept in a local file",
    long_about = "Plays the idconsent mobile app with a software passkey kept in a local file: \
                  enroll a phone, list its devices, read a consent QR code, show what is asked \
                  and approve or reject it. The passkey's private key is stored unprotected: \
                  for development and tests only."
)]
struct Cli {
    /// The wallet file (created by `enroll`).
    #[arg(long, global = true, env = "IDC_WALLET", default_value = "wallet.json")]
    wallet: PathBuf,

    /// The service's URL [default for `enroll`: http://127.0.0.1:8080; later: the wallet's].
    #[arg(long, global = true, env = "IDC_WALLET_SERVER")]
    server: Option<String>,

    /// The WebAuthn origin the wallet claims; one of the service's IDC_RP_ORIGINS
    /// [default for `enroll`: http://localhost:8080; later: the wallet's].
    #[arg(long, global = true, env = "IDC_WALLET_ORIGIN")]
    origin: Option<String>,

    /// Machine-readable output: one JSON document (a JSON line per event for `webhook-listen`).
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Enroll a phone: SMS code, passkey registration and enrollment verification in one go.
    /// On a phone that already has devices the new device is pending: approve it from one of
    /// them (`approve dev_…`), or start a recovery (`recover`), then `finish`.
    Enroll {
        /// E.164 phone number, e.g. +15557654321.
        #[arg(long)]
        phone: String,
        /// The user's name.
        #[arg(long)]
        name: Option<String>,
        /// How the device shows in the device list.
        #[arg(long, default_value = "idconsent-wallet")]
        device_name: String,
        /// The SMS code (asked on the terminal when neither this nor --otp-from-dev-mailbox is given).
        #[arg(long, conflicts_with = "otp_from_dev_mailbox")]
        otp: Option<String>,
        /// Read the SMS code from the dev mailbox (`IDC_MODE=dev`).
        #[arg(long)]
        otp_from_dev_mailbox: bool,
    },
    /// Finish a pending enrollment once another device approved this one (or its recovery
    /// ended).
    Finish,
    /// No device left to approve this one: start a recovery (it becomes active after the
    /// cooling-off period unless one of the phone's devices rejects it).
    Recover,
    /// Sign in with the passkey and keep the app tokens in the wallet.
    Login,
    /// List this user's devices (signs in or refreshes the token as needed).
    Devices,
    /// Show what a consent (or a mandate `md_…`, or a new device `dev_…`) asks, after checking
    /// the challenge
    /// commits to it; signs nothing.
    Show(Target),
    /// Show a consent, a mandate or a new device of this phone, check the commitment, then
    /// approve it with the passkey.
    Approve(Target),
    /// Show a consent, a mandate or a new device of this phone, check the commitment, then
    /// reject it with the passkey.
    Reject(Target),
    /// Print the wallet: server, origin, phone, device.
    Info,
    /// Merchant side, for development: receive webhooks, verify their Standard Webhooks
    /// signatures and print each event.
    WebhookListen {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Port to listen on (0 picks a free one; the address is printed).
        #[arg(long, default_value_t = 9000)]
        port: u16,
        /// The application's webhook secret (`whsec_…`).
        #[arg(long, env = "IDC_WEBHOOK_SECRET")]
        secret: String,
        /// Exit once a verified event of each of these types has arrived (comma-separated or repeated).
        #[arg(long, value_delimiter = ',')]
        until: Vec<String>,
    },
}

/// What to decide: a consent — its session id, its QR payload (`idconsent://auth/…`) or its QR
/// PNG — a mandate (`md_…`), or a new device of this phone (`dev_…`).
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
struct Target {
    /// `cs_…`, the QR payload `idconsent://auth/cs_…`, a mandate `md_…`, or a pending device
    /// `dev_…`.
    session: Option<String>,
    /// A PNG of the consent's QR code (`-` for standard input).
    #[arg(long)]
    qr: Option<PathBuf>,
}

impl Target {
    /// The purpose and the object's id.
    fn purpose(&self) -> anyhow::Result<(&'static str, String)> {
        match &self.session {
            Some(id) if id.starts_with("dev_") => Ok(("device_add", id.clone())),
            Some(id) if id.starts_with("md_") => Ok(("mandate", id.clone())),
            _ => Ok(("consent", self.session_id()?)),
        }
    }

    fn session_id(&self) -> anyhow::Result<String> {
        match (&self.session, &self.qr) {
            (_, Some(path)) => qr::session_id(&qr::read_png(path)?),
            (Some(session), None) => qr::session_id(session),
            (None, None) => anyhow::bail!("name a session id or pass --qr <file.png>"),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json = cli.json;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if json {
                say!("{}", json!({"error": format!("{error:#}")}));
            }
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::WebhookListen {
        host,
        port,
        secret,
        until,
    } = cli.command
    {
        return listen::run(listen::Listen {
            host,
            port,
            secret,
            until,
            json: cli.json,
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run_app(cli))
}

async fn run_app(cli: Cli) -> anyhow::Result<()> {
    let Cli {
        wallet: path,
        server,
        origin,
        json,
        command,
    } = cli;
    match command {
        Command::Enroll {
            phone,
            name,
            device_name,
            otp,
            otp_from_dev_mailbox,
        } => {
            let mut wallet = app::wallet_for_enrollment(
                &path,
                api::normalise_server(server.as_deref().unwrap_or(DEFAULT_SERVER)),
                origin.unwrap_or_else(|| DEFAULT_ORIGIN.to_owned()),
            )?;
            let api = Api::new(&wallet.file.server, &wallet.file.installation_id)?;
            let otp = match (otp, otp_from_dev_mailbox) {
                (Some(code), _) => Otp::Given(code),
                (None, true) => Otp::DevMailbox,
                (None, false) => Otp::Prompt,
            };
            let enrolled = app::enroll(
                &mut wallet,
                &api,
                Enroll {
                    phone,
                    name,
                    device_name,
                    otp,
                },
            )
            .await?;
            let phone = wallet.phone()?.to_owned();
            if json {
                print_json(&json!({
                    "phone": phone,
                    "enrollmentId": enrolled.enrollment_id,
                    "status": enrolled.status,
                    "deviceId": enrolled.device_id,
                    "credentialId": enrolled.credential_id,
                    "wallet": path,
                }));
            } else {
                if enrolled.status == "pending" {
                    say!("Registered a passkey for {phone}, pending approval");
                    say!("  enrollment  {}", enrolled.enrollment_id);
                    say!("  device      {} (pending)", enrolled.device_id);
                    say!("  wallet      {}", path.display());
                    say!(
                        "This phone already has devices: approve this one from one of them \
                         (idconsent-wallet approve {}), or start a recovery \
                         (idconsent-wallet recover); then run idconsent-wallet finish.",
                        enrolled.device_id
                    );
                } else {
                    say!("Enrolled {phone} ({})", enrolled.status);
                    say!("  enrollment  {}", enrolled.enrollment_id);
                    say!("  device      {}", enrolled.device_id);
                    say!("  wallet      {}", path.display());
                }
            }
        }
        Command::Login => {
            let (mut wallet, api) = open(&path, server, origin)?;
            let pair = app::login(&mut wallet, &api).await?;
            let expires_in = pair["expiresIn"].as_u64().unwrap_or_default();
            if json {
                print_json(&json!({
                    "phone": wallet.phone()?,
                    "tokenType": pair["tokenType"],
                    "expiresIn": expires_in,
                }));
            } else {
                say!(
                    "Signed in as {}; access token valid for {expires_in} s, kept in {}",
                    wallet.phone()?,
                    path.display()
                );
            }
        }
        Command::Devices => {
            let (mut wallet, api) = open(&path, server, origin)?;
            let devices = app::devices(&mut wallet, &api).await?;
            let this = wallet.file.device_id.clone().unwrap_or_default();
            if json {
                print_json(&json!({"devices": devices, "thisDevice": this}));
            } else {
                print_devices(wallet.phone()?, &devices, &this);
            }
        }
        Command::Finish => {
            let (mut wallet, api) = open_enrolling(&path, server, origin)?;
            let enrolled = app::finish(&mut wallet, &api).await?;
            if json {
                print_json(&json!({
                    "enrollmentId": enrolled.enrollment_id,
                    "status": enrolled.status,
                    "deviceId": enrolled.device_id,
                }));
            } else {
                say!("Enrolled {} ({})", wallet.phone()?, enrolled.status);
                say!("  device      {}", enrolled.device_id);
            }
        }
        Command::Recover => {
            let (wallet, api) = open_enrolling(&path, server, origin)?;
            let device = app::recover(&wallet, &api).await?;
            if json {
                print_json(&device);
            } else {
                say!(
                    "Recovery started: device {} becomes active at {} unless one of the phone's \
                     devices rejects it; then run `idconsent-wallet finish`",
                    device["id"].as_str().unwrap_or_default(),
                    device["recoveryEndsAt"].as_str().unwrap_or_default()
                );
            }
        }
        Command::Show(target) => {
            let (purpose, session) = target.purpose()?;
            let (wallet, api) = open(&path, server, origin)?;
            let started = app::begin(&wallet, &api, purpose, Some(&session)).await?;
            let context = app::verified_context(&wallet, &started, purpose, Some(&session))?;
            if json {
                print_json(&json!({
                    "sessionId": session,
                    "context": context,
                    "contextHash": started["contextHash"],
                    "commitmentVerified": true,
                }));
            } else {
                print_context(&session, &context, &started);
            }
        }
        Command::Approve(target) => decide(&path, server, origin, json, &target, "approve").await?,
        Command::Reject(target) => decide(&path, server, origin, json, &target, "reject").await?,
        Command::Info => {
            let wallet =
                Wallet::open(&path)?.with_context(|| format!("no wallet at {}", path.display()))?;
            let file = &wallet.file;
            if json {
                print_json(&json!({
                    "wallet": path,
                    "server": file.server,
                    "origin": file.origin,
                    "installationId": file.installation_id,
                    "phone": file.phone,
                    "enrollmentId": file.enrollment_id,
                    "deviceId": file.device_id,
                    "signedIn": file.tokens.is_some(),
                }));
            } else {
                let or_none = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".into());
                say!("wallet        {}", path.display());
                say!("server        {}", file.server);
                say!("origin        {}", file.origin);
                say!("installation  {}", file.installation_id);
                say!("phone         {}", or_none(&file.phone));
                say!("enrollment    {}", or_none(&file.enrollment_id));
                say!("device        {}", or_none(&file.device_id));
            }
        }
        // Handled in `run`, without a wallet or a runtime.
        Command::WebhookListen { .. } => anyhow::bail!("webhook-listen runs without the wallet"),
    }
    Ok(())
}

/// A wallet that registered a passkey (its enrollment may be pending) and a client for its
/// server.
fn open_enrolling(
    path: &Path,
    server: Option<String>,
    origin: Option<String>,
) -> anyhow::Result<(Wallet, Api)> {
    let mut wallet =
        Wallet::open(path)?.with_context(|| format!("no wallet at {}", path.display()))?;
    if let Some(server) = server {
        wallet.file.server = api::normalise_server(&server);
    }
    if let Some(origin) = origin {
        wallet.file.origin = origin;
    }
    let api = Api::new(&wallet.file.server, &wallet.file.installation_id)?;
    Ok((wallet, api))
}

/// An enrolled wallet and a client for its server (`--server`/`--origin` override for this run).
fn open(
    path: &Path,
    server: Option<String>,
    origin: Option<String>,
) -> anyhow::Result<(Wallet, Api)> {
    let mut wallet = Wallet::open_enrolled(path)?;
    if let Some(server) = server {
        wallet.file.server = api::normalise_server(&server);
    }
    if let Some(origin) = origin {
        wallet.file.origin = origin;
    }
    let api = Api::new(&wallet.file.server, &wallet.file.installation_id)?;
    Ok((wallet, api))
}

async fn decide(
    path: &Path,
    server: Option<String>,
    origin: Option<String>,
    json: bool,
    target: &Target,
    decision: &str,
) -> anyhow::Result<()> {
    let (purpose, session) = target.purpose()?;
    let (mut wallet, api) = open(path, server, origin)?;
    let started = app::begin(&wallet, &api, purpose, Some(&session)).await?;
    // Nothing is signed unless the challenge commits to exactly this context.
    let context = app::verified_context(&wallet, &started, purpose, Some(&session))?;
    if !json {
        print_context(&session, &context, &started);
    }
    let decided = app::decide(&mut wallet, &api, &started, decision).await?;
    if json {
        print_json(&json!({
            "sessionId": session,
            "decision": decision,
            "verified": decided.verified,
            "status": decided.status,
            "context": context,
        }));
    } else {
        let done = if decision == "approve" {
            "Approved"
        } else {
            "Rejected"
        };
        let what = if purpose == "device_add" {
            "device"
        } else {
            "session"
        };
        say!(
            "{done} with the passkey: {what} {session} is now {}",
            decided.status
        );
    }
    Ok(())
}

fn print_context(session: &str, context: &Value, started: &Value) {
    if context["type"] == "device_add" {
        say!("A new device asks to join this phone's account: {session}");
    } else {
        say!("Consent request {session}");
    }
    for (label, value) in commitment::describe(context) {
        say!("  {label:<12} {value}");
    }
    say!(
        "  commitment   verified: the challenge is SHA-256(nonce, context hash {})",
        started["contextHash"].as_str().unwrap_or_default()
    );
}

fn print_devices(phone: &str, devices: &[Value], this: &str) {
    say!("Devices of {phone}:");
    let field = |device: &Value, name: &str| device[name].as_str().unwrap_or("-").to_owned();
    for device in devices {
        let id = field(device, "id");
        let marker = if id == this { "  (this wallet)" } else { "" };
        say!(
            "  {id}  {:<11} {:<20} platform {:<8} created {}  last used {}{marker}",
            field(device, "status"),
            field(device, "name"),
            field(device, "platform"),
            field(device, "createdAt"),
            field(device, "lastUsedAt"),
        );
        if let Some(ends) = device["recoveryEndsAt"].as_str() {
            say!("      recovery ends {ends} unless rejected");
        }
    }
    if devices.is_empty() {
        say!("  (none)");
    }
}

fn print_json(value: &Value) {
    say!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}
