//! A load generator for signed requests: `POST /v1/consents/auth` (`--scenario consents`, the
//! default), `POST /v1/oauth/token` (`--scenario oauth-exchange`), `POST /v1/service/mandates`
//! (`--scenario mandates`), unsigned `GET /v1/qr/{id}/image` (`--scenario qr-image`), or
//! `POST /v1/signature/documents` with a 1 MiB PDF (`--scenario signatures`).
//!
//! Every request is signed (CONTRACT §2.1) and each signature is accepted once, so generic
//! tools (oha, wrk) cannot replay a fixed request. This one signs each request with its own
//! timestamp and a unique recipient, keeps `--connections` requests in flight (one keep-alive
//! connection each) for `--duration` seconds after a warm-up, and prints requests/s, latency
//! percentiles and the non-2xx count. With `--rate` it sends on a fixed schedule instead (open
//! loop) and measures latency from each request's scheduled start.
//!
//! With `--receiver 127.0.0.1:PORT` it also runs a minimal webhook receiver (answers 204,
//! counts requests), so the sessions' `consent.created` webhooks are really delivered, as they
//! are in production; point `--callback-url` at it (the default does).
//!
//! The exchange scenario first prepares `--codes` authorization codes, unmeasured: for each, a
//! signed `POST /v1/oauth/requests` (S256 challenge of a fixed verifier), a sandbox approval and
//! a status read that returns the code. It then measures exchanges of those codes, oldest first
//! (as merchants exchange each code seconds after its approval); the run ends
//! early (and says so) if they run out.
//!
//! `scripts/load.sh consents` and `scripts/load.sh oauth-exchange` run it against the release
//! binary.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

mod plan;
mod receiver;
mod report;

use plan::{CHALLENGE, Plan, body, exchange_body, fixed_body, mandate_body, recipient};
use receiver::{receive, wait_until_quiet};
use report::{Tally, report};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use clap::Parser;
use tokio::net::TcpListener;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scenario {
    /// Signed `POST /v1/consents/auth`, each for a new recipient.
    Consents,
    /// Signed `POST /v1/oauth/token` with codes prepared before the measurement.
    OauthExchange,
    /// Signed `POST /v1/service/mandates`, each for a new recipient.
    Mandates,
    /// Unsigned `GET /v1/qr/{id}/image` of one QR code generated before the measurement.
    QrImage,
    /// Signed `POST /v1/signature/documents` with a 1 MiB PDF and one signer.
    Signatures,
    /// Signed `POST /v1/identity/verify` of a generated passport and selfie (analysis runs
    /// in the server's background workers meanwhile).
    Identity,
}

#[derive(Debug, Clone, Parser)]
#[command(about = "Signed-request load generator")]
struct Args {
    /// What to send.
    #[arg(long, value_enum, default_value_t = Scenario::Consents)]
    scenario: Scenario,
    /// oauth-exchange: authorization codes to prepare (enough for warm-up and measurement).
    #[arg(long, default_value_t = 100_000)]
    codes: usize,
    /// oauth-exchange: the application's registered redirect URI.
    #[arg(long, default_value = "https://shop.example/oauth/callback")]
    redirect_uri: String,
    /// The service, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// Other processes of the same service (same database): connection `i` talks to process
    /// `i mod n` (`scripts/load.sh` with `NODES=2`). Setup and probes use `--url`.
    #[arg(long)]
    also_url: Vec<String>,
    /// An `mk_test_` (or `mk_live_`) API key.
    #[arg(long)]
    api_key: String,
    /// The key's `sk_` signing secret.
    #[arg(long)]
    secret: String,
    /// The application's client ID.
    #[arg(long)]
    client_id: String,
    /// Requests kept in flight, one connection each.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Open loop: start requests at this many per second (on schedule, whatever the answers),
    /// and count latency from each request's scheduled start, so a stalled server shows as
    /// latency rather than as fewer requests. Without it, each connection sends its next
    /// request when the previous one is answered (closed loop, like wrk or oha).
    #[arg(long)]
    rate: Option<f64>,
    /// Unmeasured seconds before the measurement (connections open, caches warm).
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Run a counting webhook receiver on this address (answers 204 to everything).
    #[arg(long)]
    receiver: Option<String>,
    /// The sessions' callbackUrl; defaults to the receiver's `/hooks` when there is one.
    #[arg(long)]
    callback_url: Option<String>,
    /// Seconds to wait after the run for the receiver to catch up (0: do not wait).
    #[arg(long, default_value_t = 0.0)]
    drain: f64,
    /// Server processes whose CPU time (user + system) to count over the measured window
    /// alone: printed per measured request, without the warm-up and the preparation.
    #[arg(long)]
    server_pid: Vec<u32>,
    /// Database processes (PostgreSQL's backends and workers) counted the same way.
    #[arg(long)]
    database_pid: Vec<u32>,
    /// A command run with `on` when the measured window opens and `off` when it closes, after
    /// the words given here (e.g. `scripts/callgrind-window.sh <pid>`: instructions are then
    /// counted over the window alone).
    #[arg(long)]
    window_hook: Option<String>,
    /// Three digits that start every recipient (`+1555<run><7-digit counter>`), so several runs
    /// against one database never put more than one session on a recipient.
    #[arg(long)]
    run: Option<u16>,
}

/// Runs `--window-hook` with `state` appended; a hook that fails is reported, not fatal.
fn run_window_hook(hook: &Option<String>, state: &str) {
    let Some(hook) = hook else { return };
    let mut words = hook.split_whitespace();
    let Some(program) = words.next() else { return };
    match std::process::Command::new(program)
        .args(words)
        .arg(state)
        .status()
    {
        Ok(status) if status.success() => {}
        outcome => eprintln!("window hook `{hook} {state}` failed: {outcome:?}"),
    }
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let received = Arc::new(AtomicU64::new(0));
    let receiver_url = match &args.receiver {
        Some(address) => {
            let listener = TcpListener::bind(address).await.unwrap();
            let url = format!("http://{}/hooks", listener.local_addr().unwrap());
            tokio::spawn(receive(listener, received.clone()));
            Some(url)
        }
        None => None,
    };
    let callback_url = args
        .callback_url
        .clone()
        .or(receiver_url)
        .unwrap_or_else(|| "http://127.0.0.1:9/hooks".into());
    let run = args
        .run
        .unwrap_or_else(|| (now_millis() / 1000 % 1000) as u16)
        % 1000;
    let base = args.url.trim_end_matches('/').to_owned();
    let plan = match args.scenario {
        Scenario::Consents => {
            probe_consent(&args, &base, &callback_url, run).await;
            Plan::Consents {
                endpoint: format!("{base}/v1/consents/auth"),
                callback_url,
                run,
            }
        }
        Scenario::Mandates => {
            let endpoint = format!("{base}/v1/service/mandates");
            let probe = post_signed(
                &reqwest::Client::new(),
                &endpoint,
                &args,
                mandate_body(&recipient(run, 0)),
            )
            .await
            .expect("the probe request failed");
            let status = probe.status().as_u16();
            let text = probe.text().await.unwrap_or_default();
            assert!(
                status == 200 && text.contains("pending_authorization"),
                "the probe mandate was not created: {status} {text}"
            );
            println!("probe: 200, response {} bytes", text.len());
            Plan::Mandates { endpoint, run }
        }
        Scenario::Signatures => {
            let document = base64::engine::general_purpose::STANDARD
                .encode(idconsent_e2e::pdf::padded_pdf(1, "", 1 << 20));
            let body = serde_json::json!({
                "document": document,
                "signers": [{"email": "ann@example.com", "name": "Ann Lee"}],
            });
            fixed_body(&args, format!("{base}/v1/signature/documents"), &body).await
        }
        Scenario::Identity => {
            let encode = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
            let mrz = idconsent_verification::mrz::specimen_td3();
            let passport = idconsent_ocr_tesseract::fixtures::passport(&mrz, None, 1.5)
                .expect("scripts/setup-identity.sh installs the OCR-B font");
            let body = serde_json::json!({
                "documentType": "passport",
                "documentFront": encode(passport),
                "selfie": encode(idconsent_image_analysis::fixtures::natural(1)),
                "country": "SE",
            });
            fixed_body(&args, format!("{base}/v1/identity/verify"), &body).await
        }
        Scenario::QrImage => {
            let generated = post_signed(
                &reqwest::Client::new(),
                &format!("{base}/v1/qr/generate"),
                &args,
                serde_json::to_vec(&serde_json::json!({
                    "data": "https://shop.example/pay/42", "format": "png", "size": 256,
                    "expiresIn": 86_400
                }))
                .unwrap(),
            )
            .await
            .expect("generating the QR code failed");
            let created: serde_json::Value = generated.json().await.unwrap_or_default();
            let id = created["data"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("no QR code generated: {created}"));
            println!("probe: QR code {id} generated");
            Plan::QrImage {
                endpoint: format!("{base}/v1/qr/{id}/image"),
            }
        }
        Scenario::OauthExchange => {
            let codes = prepare_codes(&args, &base, run).await;
            if args.receiver.is_some() {
                // The preparation's webhooks are delivered by the server under test: let that
                // backlog drain before measuring.
                wait_until_quiet(&received, Duration::from_secs(1)).await;
            }
            Plan::Exchange {
                endpoint: format!("{base}/v1/oauth/token"),
                codes: std::sync::Mutex::new(codes),
                exhausted: AtomicBool::new(false),
            }
        }
    };
    let counter = Arc::new(AtomicU64::new(1));

    // One client per connection, with one idle connection each: exactly one keep-alive
    // connection per task. Built before the schedule starts (TLS setup takes a while).
    let clients: Vec<reqwest::Client> = (0..args.connections)
        .map(|_| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .unwrap()
        })
        .collect();
    let schedule = args
        .rate
        .map(|rate| (Instant::now(), rate, counter.load(Ordering::Relaxed)));
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let args = Arc::new(args);
    let plan = Arc::new(plan);
    let nodes: Vec<String> = std::iter::once(&args.url)
        .chain(&args.also_url)
        .map(|url| url.trim_end_matches('/').to_owned())
        .collect();
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(connection, client)| {
            // Each connection keeps to one process, as a load balancer's keep-alive would.
            let endpoint = plan
                .endpoint()
                .replacen(&nodes[0], &nodes[connection % nodes.len()], 1);
            let (args, plan) = (args.clone(), plan.clone());
            let (counter, measuring, stop) = (counter.clone(), measuring.clone(), stop.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                while !stop.load(Ordering::Relaxed) {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let Some(body) = plan.body(&args, n) else {
                        break;
                    };
                    let started = match schedule {
                        Some((start, rate, first)) => {
                            let at = start + Duration::from_secs_f64((n - first) as f64 / rate);
                            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                            at
                        }
                        None => Instant::now(),
                    };
                    let sent = match plan.as_ref() {
                        Plan::QrImage { .. } => client.get(&endpoint).send().await,
                        _ => post_signed(&client, &endpoint, &args, body).await,
                    };
                    let outcome = match sent {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            response.bytes().await.map(|_| status)
                        }
                        Err(error) => Err(error),
                    };
                    let elapsed = started.elapsed();
                    if !measuring.load(Ordering::Relaxed) {
                        continue;
                    }
                    match outcome {
                        Ok(status) => {
                            *tally.statuses.entry(status).or_default() += 1;
                            tally
                                .latencies
                                .push(u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX));
                        }
                        Err(_) => tally.errors += 1,
                    }
                }
                tally
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    let received_before = received.load(Ordering::Relaxed);
    run_window_hook(&args.window_hook, "on");
    measuring.store(true, Ordering::Relaxed);
    let cpu_before = report::cpu_ticks(&args.server_pid);
    let database_before = report::cpu_ticks(&args.database_pid);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.duration);
    // Ends at the deadline, or when the prepared codes run out.
    while Instant::now() < deadline && !plan.exhausted() {
        tokio::time::sleep(Duration::from_millis(10).min(deadline - Instant::now())).await;
    }
    measuring.store(false, Ordering::Relaxed);
    run_window_hook(&args.window_hook, "off");
    let cpu_after = report::cpu_ticks(&args.server_pid);
    let database_after = report::cpu_ticks(&args.database_pid);
    let elapsed = started.elapsed().as_secs_f64();
    if plan.exhausted() {
        println!("the prepared codes ran out after {elapsed:.1} s of measurement (raise --codes)");
    }
    let received_during = received.load(Ordering::Relaxed) - received_before;
    stop.store(true, Ordering::Relaxed);

    let mut total = Tally::default();
    for task in tasks {
        let tally = task.await.unwrap();
        total.latencies.extend(tally.latencies);
        for (status, count) in tally.statuses {
            *total.statuses.entry(status).or_default() += count;
        }
        total.errors += tally.errors;
    }
    report(&args, &total, elapsed, received_during);
    if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
        report::cpu_per_request("server", &total, after.saturating_sub(before));
    }
    if let (Some(before), Some(after)) = (database_before, database_after) {
        report::cpu_per_request("database", &total, after.saturating_sub(before));
    }
    if args.receiver.is_some() && args.drain > 0.0 {
        let created = counter.load(Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs_f64(args.drain);
        while received.load(Ordering::Relaxed) < created && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "webhooks received in all: {} of {} sessions created (drained for {:.1} s)",
            received.load(Ordering::Relaxed),
            created,
            args.drain
        );
    }
}

/// What the connections send.
/// Signs `body` with its own timestamp (CONTRACT §2.1) and posts it.
async fn post_signed(
    client: &reqwest::Client,
    endpoint: &str,
    args: &Args,
    body: Vec<u8>,
) -> Result<reqwest::Response, reqwest::Error> {
    let timestamp = now_millis().to_string();
    let signature =
        idconsent_auth_hmac::sign_request(args.secret.as_bytes(), &args.api_key, &timestamp, &body);
    client
        .post(endpoint)
        .header("x-api-key", &args.api_key)
        .header("x-timestamp", timestamp)
        .header("x-signature", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
}

/// Posts a signed JSON body and returns the status and the parsed answer.
async fn call(
    client: &reqwest::Client,
    endpoint: &str,
    args: &Args,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let response = post_signed(client, endpoint, args, serde_json::to_vec(body).unwrap())
        .await
        .unwrap_or_else(|error| panic!("{endpoint}: {error:?}"));
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or_default())
}

/// One checked consent first: the whole run is meaningless if this one fails.
async fn probe_consent(args: &Args, base: &str, callback_url: &str, run: u16) {
    let client = reqwest::Client::new();
    let endpoint = format!("{base}/v1/consents/auth");
    let body = body(&args.client_id, &recipient(run, 0), callback_url);
    let probe = post_signed(&client, &endpoint, args, body)
        .await
        .expect("the probe request failed");
    let (status, bytes) = (probe.status(), probe.bytes().await.unwrap());
    let created: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let qr = created["data"]["qr"].as_str().unwrap_or_default();
    let png = base64::engine::general_purpose::STANDARD
        .decode(qr)
        .unwrap_or_default();
    assert!(
        status.as_u16() == 201 && png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the probe request was not a 201 with a PNG QR code: {status} {}",
        String::from_utf8_lossy(&bytes)
    );
    println!(
        "probe: 201, response {} bytes, QR PNG {} bytes; callbackUrl {callback_url}",
        bytes.len(),
        png.len()
    );
}

/// Prepares `--codes` approved authorization codes (request, sandbox approval, status), with
/// `--connections` in flight, then checks that one of them exchanges for a token.
async fn prepare_codes(args: &Args, base: &str, run: u16) -> Vec<String> {
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let wanted = args.codes as u64 + 1;
    let args_shared = Arc::new(args.clone());
    // One client for all tasks (it is a handle to one pool): building one per task loads the
    // system's CA bundle each time, and on a busy core the first connections then sat idle
    // until the server's request timeout answered them 408.
    let client = reqwest::Client::new();
    let tasks: Vec<_> = (0..args.connections)
        .map(|_| {
            let (args, next, base) = (args_shared.clone(), next.clone(), base.to_owned());
            let client = client.clone();
            tokio::spawn(async move {
                let mut codes = Vec::new();
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= wanted {
                        return codes;
                    }
                    let request = serde_json::json!({
                        "recipient": recipient(run, n),
                        "redirectUri": args.redirect_uri,
                        "codeChallenge": CHALLENGE,
                        "claims": ["phone_number"],
                        "scopes": ["openid"],
                        "state": format!("load-{n}"),
                    });
                    let (status, created) = call(
                        &client,
                        &format!("{base}/v1/oauth/requests"),
                        &args,
                        &request,
                    )
                    .await;
                    assert_eq!(status, 201, "creating an OAuth request: {created}");
                    let session = created["data"]["sessionId"].as_str().unwrap().to_owned();
                    let approve = format!("{base}/v1/sandbox/consents/{session}/approve");
                    // The signature covers the body but not the path, and each is accepted once:
                    // an empty body signed in the same millisecond as another would be refused
                    // as a replay, so this one names the session.
                    let body = serde_json::json!({"sessionId": session});
                    let (status, approved) = call(&client, &approve, &args, &body).await;
                    assert_eq!(status, 200, "approving {session}: {approved}");
                    let (status, read) = call(
                        &client,
                        &format!("{base}/v1/oauth/requests/status"),
                        &args,
                        &serde_json::json!({"sessionId": session}),
                    )
                    .await;
                    assert_eq!(status, 200, "reading {session}: {read}");
                    let code = read["data"]["code"].as_str().expect("an approved code");
                    codes.push((n, code.to_owned()));
                }
            })
        })
        .collect();
    let mut numbered = Vec::with_capacity(wanted as usize);
    for task in tasks {
        numbered.extend(task.await.unwrap());
    }
    // Exchanged in the order they were issued, as merchants do a few seconds after each approval
    // (the connections pop from the end).
    numbered.sort_unstable_by_key(|(n, _)| std::cmp::Reverse(*n));
    let mut codes: Vec<String> = numbered.into_iter().map(|(_, code)| code).collect();
    let probe = codes.pop().expect("at least one code");
    let (status, token) = call(
        &reqwest::Client::new(),
        &format!("{base}/v1/oauth/token"),
        args,
        &serde_json::from_slice(&exchange_body(&probe)).unwrap(),
    )
    .await;
    assert!(
        status == 200 && token["access_token"].as_str().is_some(),
        "the probe exchange was not a 200 with an access token: {status} {token}"
    );
    println!(
        "prepared {} codes in {:.1} s; probe exchange: 200, access token {} bytes",
        codes.len(),
        started.elapsed().as_secs_f64(),
        token["access_token"].as_str().unwrap_or_default().len()
    );
    codes
}
