//! The README's wallet walkthrough, for real: the `idconsent-wallet` binary against the real
//! service over HTTP. A merchant creates consents with signed requests; the wallet enrolls a
//! phone (code from the dev mailbox), approves one consent from its QR PNG and rejects another
//! by session id; the webhooks arrive signed — at a local receiver and at the wallet's own
//! `webhook-listen`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use idconsent_e2e::receiver::{Received, Receiver};
use idconsent_e2e::scenario::unique;
use idconsent_e2e::{Backend, TestApp, json as read_json};
use reqwest::Method;
use serde_json::{Value, json};

const WALLET: &str = env!("CARGO_BIN_EXE_idconsent-wallet");
/// `Config::for_tests` accepts this WebAuthn origin.
const ORIGIN: &str = "http://localhost:8080";

/// Runs the wallet on `wallet_file` against `app`; returns its output.
async fn wallet(app: &TestApp, wallet_file: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(WALLET);
    command
        .env_remove("IDC_WALLET")
        .env_remove("IDC_WALLET_SERVER")
        .env_remove("IDC_WALLET_ORIGIN")
        .arg("--wallet")
        .arg(wallet_file)
        .args(["--server", &app.base, "--origin", ORIGIN])
        .args(args)
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// The wallet's `--json` answer, asserting it succeeded.
async fn wallet_json(app: &TestApp, wallet_file: &Path, args: &[&str]) -> Value {
    let output = wallet(app, wallet_file, args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "idconsent-wallet {args:?} failed\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|_| panic!("not JSON: {stdout}"))
}

/// A `webhook-listen` process, killed when the test lets go of it.
struct Listener {
    child: Child,
    url: String,
    lines: mpsc::Receiver<String>,
}

impl Listener {
    fn start(secret: &str, until: &str) -> Self {
        let mut child = Command::new(WALLET)
            .args([
                "--json",
                "webhook-listen",
                "--port",
                "0",
                "--secret",
                secret,
            ])
            .args(["--until", until])
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let first: Value = serde_json::from_str(
            &lines
                .recv_timeout(Duration::from_secs(30))
                .expect("the listener did not say where it listens"),
        )
        .unwrap();
        let url = first["listening"].as_str().unwrap().to_owned();
        Self { child, url, lines }
    }

    /// The events printed until the process exits by itself (`--until` satisfied).
    async fn events_until_exit(mut self) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "webhook-listen failed: {status}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "webhook-listen did not see its events in time; printed so far: {:?}",
                self.lines.try_iter().collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The reader thread ends with the process's output.
        std::thread::sleep(Duration::from_millis(100));
        self.lines
            .try_iter()
            .map(|line| serde_json::from_str(&line).unwrap())
            .collect()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Merchant {
    client_id: String,
    key: String,
    secret: String,
    webhook_secret: String,
}

/// A sandbox merchant whose application's webhooks go to `callback` (sandbox keys work before
/// go-live), as the README's onboarding does.
async fn merchant(app: &TestApp, callback: &str) -> Merchant {
    let owner = app.register_merchant().await;
    let created = app
        .create_application(
            &owner,
            &json!({"name": "Checkout", "callbackUrl": callback}),
        )
        .await;
    let application = &created["application"];
    let text = |value: &Value| value.as_str().unwrap().to_owned();
    Merchant {
        client_id: text(&application["clientId"]),
        key: text(&application["credentials"]["sandbox"]["apiKey"]),
        secret: text(&application["credentials"]["sandbox"]["secret"]),
        webhook_secret: text(&application["webhookSecret"]),
    }
}

/// A signed `POST /v1/consents/auth`; returns `data` (session id and QR PNG).
async fn consent(app: &TestApp, merchant: &Merchant, phone: &str, callback: &str) -> Value {
    let body = json!({
        "clientId": merchant.client_id,
        "recipient": phone,
        "intent": "TRANSACTION",
        "callbackUrl": callback,
        "transaction": {
            "type": "payment", "description": "Order 42", "amount": 19.99,
            "currency": "EUR", "payee": "Example Shop"
        }
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let response = app
        .signed(
            Method::POST,
            "/v1/consents/auth",
            &merchant.key,
            &merchant.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    read_json(response, 201).await["data"].clone()
}

async fn status_of(app: &TestApp, merchant: &Merchant, session: &str) -> Value {
    let response = app
        .signed(
            Method::GET,
            &format!("/v1/consents/auth/{session}"),
            &merchant.key,
            &merchant.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    read_json(response, 200).await["data"]["status"].clone()
}

fn auth_success_for(received: &[Received], session: &str) -> Option<Received> {
    received
        .iter()
        .find(|r| r.event_type() == "auth.success" && r.json()["data"]["purpose"]["id"] == session)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_walkthrough() {
    let app = TestApp::start(Backend::Sqlite)
        .await
        .expect("SQLite is always available");
    let directory = tempfile::tempdir().unwrap();
    let wallet_file: PathBuf = directory.path().join("wallet.json");
    let phone = format!("+1555{}", &unique()[..7]);

    // The end user enrolls: SMS code from the dev mailbox, passkey, enrollment verified.
    let enrolled = wallet_json(
        &app,
        &wallet_file,
        &[
            "--json",
            "enroll",
            "--phone",
            &phone,
            "--name",
            "Alan",
            "--otp-from-dev-mailbox",
        ],
    )
    .await;
    assert_eq!(enrolled["status"], "completed", "{enrolled}");
    assert_eq!(enrolled["phone"], phone.as_str());
    let device_id = enrolled["deviceId"].as_str().unwrap().to_owned();
    assert!(device_id.starts_with("dev_"), "{enrolled}");
    assert!(
        enrolled["enrollmentId"]
            .as_str()
            .unwrap()
            .starts_with("enr_")
    );
    let saved: Value = serde_json::from_slice(&std::fs::read(&wallet_file).unwrap()).unwrap();
    assert_eq!(saved["deviceId"], device_id.as_str());
    assert!(saved["passkey"].as_str().is_some_and(|p| !p.is_empty()));

    // A second enrollment into the same wallet file is refused.
    let again = wallet(
        &app,
        &wallet_file,
        &["enroll", "--phone", &phone, "--otp", "000000"],
    )
    .await;
    assert!(!again.status.success());

    // The merchant asks that phone to approve a payment; its webhooks go to a local receiver.
    let receiver = Receiver::start().await;
    let shop = merchant(&app, &receiver.url).await;
    let created = consent(&app, &shop, &phone, &receiver.url).await;
    let session = created["sessionId"].as_str().unwrap().to_owned();
    let qr_file = directory.path().join("qr.png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(created["qr"].as_str().unwrap())
        .unwrap();
    std::fs::write(&qr_file, png).unwrap();

    // `show` reads the QR code and checks the commitment; it signs nothing.
    let shown = wallet(
        &app,
        &wallet_file,
        &["show", "--qr", qr_file.to_str().unwrap()],
    )
    .await;
    let shown_text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown_text}");
    for expected in [
        "Example Shop",
        "Checkout",
        "TRANSACTION",
        "19.99 EUR",
        "Order 42",
        session.as_str(),
        "commitment   verified",
    ] {
        assert!(shown_text.contains(expected), "{expected} in {shown_text}");
    }
    assert_eq!(status_of(&app, &shop, &session).await, "pending");

    // The user scans the QR code and approves with the passkey.
    let approved = wallet_json(
        &app,
        &wallet_file,
        &["--json", "approve", "--qr", qr_file.to_str().unwrap()],
    )
    .await;
    assert_eq!(approved["sessionId"], session.as_str());
    assert_eq!(approved["status"], "approved", "{approved}");
    assert_eq!(approved["verified"], true);
    assert_eq!(approved["context"]["merchant"], "Example Shop");
    assert_eq!(approved["context"]["transaction"]["amount"], 19.99);

    let event = receiver.event("consent.approved", &session).await;
    assert!(event.verifies_with(&shop.webhook_secret));
    assert_eq!(event.json()["data"]["status"], "approved");
    let success = receiver
        .wait_for(|received| auth_success_for(received, &session))
        .await;
    assert!(success.verifies_with(&shop.webhook_secret));
    assert_eq!(success.json()["data"]["deviceId"], device_id.as_str());
    assert_eq!(status_of(&app, &shop, &session).await, "approved");

    // Deciding it again fails: it is no longer pending.
    let twice = wallet(&app, &wallet_file, &["reject", &session]).await;
    assert!(!twice.status.success());
    assert!(String::from_utf8_lossy(&twice.stderr).contains("409"));

    // A second consent goes to the wallet's own webhook listener; the user rejects it by id.
    let listener = Listener::start(&shop.webhook_secret, "consent.rejected,auth.success");
    let second = consent(&app, &shop, &phone, &listener.url).await;
    let second = second["sessionId"].as_str().unwrap().to_owned();
    let rejected = wallet_json(&app, &wallet_file, &["--json", "reject", &second]).await;
    assert_eq!(rejected["status"], "rejected", "{rejected}");
    assert_eq!(status_of(&app, &shop, &second).await, "rejected");
    let events = listener.events_until_exit().await;
    let verified = |kind: &str| {
        events.iter().any(|event| {
            event["type"] == kind
                && event["verified"] == true
                && (event["data"]["sessionId"] == second.as_str()
                    || event["data"]["purpose"]["id"] == second.as_str())
        })
    };
    assert!(verified("consent.rejected"), "{events:?}");
    assert!(verified("auth.success"), "{events:?}");

    // A mandate to the same phone: `show` prints its terms, `approve md_…` authorises it and
    // `mandate.signed` reaches the merchant.
    let body = json!({
        "recipient": phone, "type": "direct_debit", "amount": 49.9, "currency": "EUR",
        "frequency": "monthly", "description": "Gym membership"
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let created = app
        .signed(
            Method::POST,
            "/v1/service/mandates",
            &shop.key,
            &shop.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    let mandate = read_json(created, 200).await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = wallet(&app, &wallet_file, &["show", &mandate]).await;
    let shown_text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown_text}");
    for expected in ["direct_debit", "Gym membership", "up to 49.9 EUR, monthly"] {
        assert!(shown_text.contains(expected), "{expected} in {shown_text}");
    }
    let approved = wallet_json(&app, &wallet_file, &["--json", "approve", &mandate]).await;
    assert_eq!(approved["status"], "active", "{approved}");
    let signed = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "mandate.signed" && r.json()["data"]["id"] == mandate)
                .cloned()
        })
        .await;
    assert!(signed.verifies_with(&shop.webhook_secret));
    assert_eq!(signed.json()["data"]["status"], "active");

    // The user's devices: this one, active (signing in with the passkey, then reusing the token).
    for _ in 0..2 {
        let listed = wallet_json(&app, &wallet_file, &["--json", "devices"]).await;
        let devices = listed["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 1, "{listed}");
        assert_eq!(devices[0]["id"], device_id.as_str());
        assert_eq!(devices[0]["status"], "active");
        assert_eq!(listed["thisDevice"], device_id.as_str());
    }
    // An expired access token is refreshed (the refresh token rotates); a dead refresh token
    // means signing in with the passkey again.
    let read =
        || -> Value { serde_json::from_slice(&std::fs::read(&wallet_file).unwrap()).unwrap() };
    let write = |value: &Value| std::fs::write(&wallet_file, value.to_string()).unwrap();
    let mut saved = read();
    let first_refresh = saved["tokens"]["refreshToken"].as_str().unwrap().to_owned();
    saved["tokens"]["expiresAt"] = json!(0);
    write(&saved);
    wallet_json(&app, &wallet_file, &["--json", "devices"]).await;
    let mut saved = read();
    assert_ne!(saved["tokens"]["refreshToken"], first_refresh.as_str());
    saved["tokens"]["expiresAt"] = json!(0);
    saved["tokens"]["refreshToken"] = json!("not-a-refresh-token");
    write(&saved);
    let listed = wallet_json(&app, &wallet_file, &["--json", "devices"]).await;
    assert_eq!(listed["devices"].as_array().unwrap().len(), 1);
    assert_ne!(read()["tokens"]["refreshToken"], "not-a-refresh-token");

    app.stop().await;
}

/// ADR 0013 through the wallet: a second wallet for an enrolled phone shows its device pending;
/// the first wallet sees it, approves it with its passkey, and the second finishes its
/// enrollment; a third asks for a recovery instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_wallet_waits_for_the_first() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (first, second, third) = (
        dir.path().join("first.json"),
        dir.path().join("second.json"),
        dir.path().join("third.json"),
    );
    let phone = format!("+1555{}", &unique()[..7]);
    let enroll = |file: PathBuf| {
        let (app, phone) = (&app, phone.clone());
        async move {
            wallet_json(
                app,
                &file,
                &[
                    "--json",
                    "enroll",
                    "--phone",
                    &phone,
                    "--otp-from-dev-mailbox",
                ],
            )
            .await
        }
    };
    assert_eq!(enroll(first.clone()).await["status"], "completed");

    // The second wallet's device is pending; its text output says what to do.
    let output = wallet(
        &app,
        &second,
        &["enroll", "--phone", &phone, "--otp-from-dev-mailbox"],
    )
    .await;
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{text}");
    assert!(text.contains("pending approval"), "{text}");
    let pending = wallet_json(&app, &second, &["--json", "info"]).await;
    let pending_device = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("device"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert!(pending_device.starts_with("dev_"), "{text} {pending}");
    // It cannot finish before the approval.
    assert!(!wallet(&app, &second, &["finish"]).await.status.success());

    // The first wallet lists it as pending, shows what it approves, and approves it.
    let devices = wallet_json(&app, &first, &["--json", "devices"]).await;
    let listed = devices["devices"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|d| d["id"] == pending_device.as_str() && d["status"] == "pending"),
        "{devices}"
    );
    let approved = wallet_json(&app, &first, &["--json", "approve", &pending_device]).await;
    assert_eq!(approved["status"], "active");
    assert_eq!(approved["context"]["type"], "device_add");
    let finished = wallet_json(&app, &second, &["--json", "finish"]).await;
    assert_eq!(finished["status"], "completed");

    // A third wallet with no one to approve it starts a recovery.
    let output = wallet(
        &app,
        &third,
        &["enroll", "--phone", &phone, "--otp-from-dev-mailbox"],
    )
    .await;
    assert!(output.status.success());
    let recovering = wallet_json(&app, &third, &["--json", "recover"]).await;
    assert_eq!(recovering["status"], "pending");
    assert!(recovering["recoveryEndsAt"].as_str().is_some());
    app.stop().await;
}
