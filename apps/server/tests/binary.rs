//! The real `idconsent` binary as an operator runs it: migrate, serve, stop on SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use idconsent_store_diesel::testing::TestDatabase;

const BINARY: &str = env!("CARGO_BIN_EXE_idconsent");

fn idconsent(data_dir: &std::path::Path, database_url: &str) -> Command {
    let mut command = Command::new(BINARY);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("IDC_DATA_DIR", data_dir)
        .env("IDC_DATABASE_URL", database_url)
        .env("IDC_BIND", "127.0.0.1:0")
        .env("IDC_LOG_FORMAT", "json");
    command
}

/// A server process killed when the test lets go of it, even when the test fails, so no
/// server outlives its test.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Server {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// Starts `serve` and returns the process with the address it logged.
fn serve(mut command: Command) -> (Server, String, mpsc::Receiver<String>) {
    let mut child = command.arg("serve").stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let address = loop {
        let line = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the server did not log its address");
        let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if event["message"] == "idconsent listening" {
            break event["address"].as_str().unwrap().to_owned();
        }
    };
    (Server(child), address, receiver)
}

fn wait_for_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn serves_then_stops_gracefully_on_sigterm(database_url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, address, _logs) = serve(idconsent(dir.path(), database_url));
    let health: serde_json::Value = reqwest::get(format!("http://{address}/healthz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["data"]["status"], "ok");
    let ready = reqwest::get(format!("http://{address}/readyz"))
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_for_exit(&mut child, Duration::from_secs(20));
    assert!(status.success(), "exit status after SIGTERM: {status:?}");
    // Dev mode generated its secrets into the data directory, owner-readable only.
    assert!(dir.path().join("master.key").exists());
    assert!(dir.path().join("admin.token").exists());
}

#[tokio::test]
async fn serves_on_sqlite_and_stops_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("idconsent.db").display());
    serves_then_stops_gracefully_on_sigterm(&url).await;
}

#[tokio::test]
async fn serves_on_postgres_and_stops_gracefully_on_sigterm() {
    if let Some(database) = TestDatabase::postgres() {
        serves_then_stops_gracefully_on_sigterm(&database.url).await;
    }
}

#[test]
fn migrate_applies_once_and_then_reports_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}",
        dir.path().join("nested/dir/idconsent.db").display()
    );
    let first = idconsent(dir.path(), &url).arg("migrate").output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        String::from_utf8_lossy(&first.stdout)
            .contains("applied 2026-11-21-000001_outgoing_messages")
    );
    let second = idconsent(dir.path(), &url).arg("migrate").output().unwrap();
    assert!(String::from_utf8_lossy(&second.stdout).contains("database is up to date (sqlite)"));
}

#[test]
fn production_refuses_to_start_without_its_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("idconsent.db").display());
    let output = idconsent(dir.path(), &url)
        .env("IDC_MODE", "production")
        .arg("serve")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("IDC_MASTER_KEY is required"));
}

#[test]
fn the_operator_rotates_and_lists_the_shared_oauth_signing_keys() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("idconsent.db").display());
    // A key directory of an earlier version is imported into the database on first start.
    let legacy_dir = dir.path().join("legacy-keys");
    let now = idconsent_kernel::Timestamp::from_millis(1_763_719_200_000);
    let legacy = idconsent_jose::Es256KeyRing::open_or_create(&legacy_dir, now)
        .unwrap()
        .active_kid()
        .to_owned();
    let keys = |command: &str| {
        let output = idconsent(dir.path(), &url)
            .env("IDC_OAUTH_KEYS_DIR", &legacy_dir)
            .args(["admin", "oauth-keys", command])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let listed = keys("list");
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.starts_with(&legacy), "{listed}");
    assert!(listed.trim_end().ends_with("retired -"), "{listed}");

    let rotated = keys("rotate");
    assert!(rotated.starts_with("new OAuth signing key "), "{rotated}");
    let new_kid = rotated.split_whitespace().nth(4).unwrap().to_owned();
    assert_ne!(new_kid, legacy);
    let listed = keys("list");
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(
        lines[0].starts_with(&legacy) && !lines[0].ends_with("retired -"),
        "{listed}"
    );
    assert!(
        lines[1].starts_with(&new_kid) && lines[1].ends_with("retired -"),
        "{listed}"
    );
}

#[test]
fn an_unreachable_database_fails_start_up_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let output = idconsent(dir.path(), "mysql://root@localhost/db")
        .arg("migrate")
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unsupported database URL"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_commands_review_merchants_like_the_api() {
    use idconsent_e2e::{Backend, TestApp};
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let merchant = app.register_merchant().await;
    app.complete_onboarding(&merchant).await;
    let submitted = app
        .as_merchant(
            reqwest::Method::POST,
            "/v1/merchants/go-live",
            &merchant.token,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 202);

    let dir = tempfile::tempdir().unwrap();
    let admin = |args: &[&str]| {
        let output = idconsent(dir.path(), app.database_url())
            .env(
                "IDC_MASTER_KEY",
                "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
            )
            .arg("admin")
            .args(args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let queue = admin(&["merchants", "list", "--status", "in_review"]);
    assert!(
        queue.contains(&merchant.id) && queue.contains("in_review"),
        "{queue}"
    );
    let approved = admin(&["merchants", "approve", &merchant.id]);
    assert!(
        approved.starts_with("approved:") && approved.contains("live"),
        "{approved}"
    );

    let me = app
        .as_merchant(reqwest::Method::GET, "/v1/merchants/me", &merchant.token)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(me["data"]["merchant"]["status"], "live");
    // The approval email went into the outbox; the running server delivers it.
    let email = app.last_message(&merchant.email).await;
    assert!(email["subject"].as_str().unwrap().contains("live"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_survives_sigkill_and_is_delivered_after_restart() {
    use idconsent_e2e::receiver::Receiver;
    use idconsent_e2e::{Backend, TestApp};

    let mut app = TestApp::start(Backend::Sqlite).await.unwrap();
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    app.stop_server().await;

    let receiver = Receiver::start().await;
    receiver.answer(503);
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        let mut command = idconsent(dir.path(), app.database_url());
        command
            .env(
                "IDC_MASTER_KEY",
                "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
            )
            .env(
                "IDC_WEBHOOK_RETRY_SCHEDULE",
                "300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms,300ms",
            );
        serve(command)
    };
    let (mut first, address, _logs) = start();
    let client = reqwest::Client::new();
    let signed = |address: &str, path: &str, body: Vec<u8>| {
        let timestamp = idconsent_e2e::scenario::now_millis().to_string();
        let signature = idconsent_auth_hmac::sign_request(
            application.secret.as_bytes(),
            &application.sandbox_key,
            &timestamp,
            &body,
        );
        let request = if body.is_empty() {
            client.get(format!("http://{address}{path}"))
        } else {
            client.post(format!("http://{address}{path}"))
        };
        request
            .header("x-api-key", &application.sandbox_key)
            .header("x-timestamp", timestamp)
            .header("x-signature", signature)
            .header("content-type", "application/json")
            .body(body)
    };
    let mut sessions = Vec::new();
    for i in 0..10 {
        let body = serde_json::json!({
            "clientId": application.client_id,
            "recipient": format!("+1555000{i:04}"),
            "intent": "LOGIN",
            "callbackUrl": receiver.url,
            "transaction": {"type": "login", "description": "Sign in", "amount": 0, "currency": "USD", "payee": "Shop"}
        });
        let created = signed(
            &address,
            "/v1/consents/auth",
            serde_json::to_vec(&body).unwrap(),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(created.status(), 201);
        let created: serde_json::Value = created.json().await.unwrap();
        sessions.push(created["data"]["sessionId"].as_str().unwrap().to_owned());
    }
    // The receiver is refusing: deliveries are being attempted, none succeeds. Kill hard.
    receiver
        .wait_for(|received| (!received.is_empty()).then_some(()))
        .await;
    let killed = Command::new("kill")
        .args(["-KILL", &first.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let _ = first.wait();

    receiver.answer(200);
    let (mut second, second_address, _logs) = start();
    // Every delivery ends succeeded, none lost. An attempt leased but not recorded at the kill
    // keeps its lease (six webhook timeouts, 30 s) before the restarted worker may take it again,
    // so this wait is longer than the receiver's usual one.
    let deadline = std::time::Instant::now() + Duration::from_secs(45);
    loop {
        let listed: serde_json::Value = signed(
            &second_address,
            "/v1/webhooks/deliveries?status=succeeded&limit=100",
            Vec::new(),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        if listed["data"]["pagination"]["total"] == 10 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let received = receiver.received();
    for session in &sessions {
        assert!(
            received.iter().any(|r| r.event_type() == "consent.created"
                && r.json()["data"]["sessionId"] == session.as_str()),
            "consent.created of {session} never reached the receiver"
        );
    }
    let _ = Command::new("kill")
        .args(["-TERM", &second.id().to_string()])
        .status();
    let _ = second.wait();
    app.stop().await;
}

/// A field of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`), `None` once the process is gone.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The server process's peak resident memory while a hostile PDF is parsed (docs/security.md,
/// "PDF parsing"). The parse itself happens in a child process with its own limits.
const SERVER_PEAK_RSS_MIB: u64 = 200;

/// Issue 31, item 1: a 10 KiB PDF whose object stream repeats one offset 2,048 times over a
/// 1 MiB string (2 GiB for a parser that reads each pair on its own) gets 422 quickly, and the
/// server's own peak RSS stays under [`SERVER_PEAK_RSS_MIB`]. A watchdog kills the server
/// early if it passes 1 GiB, so a regression costs the machine no more than that.
async fn a_hostile_pdf_leaves_the_server_within_its_memory_bound(backend: idconsent_e2e::Backend) {
    use idconsent_e2e::TestApp;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = idconsent(dir.path(), app.database_url());
    command.env(
        "IDC_MASTER_KEY",
        "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
    );
    let (server, address, _logs) = serve(command);
    let pid = server.id();

    let done = Arc::new(AtomicBool::new(false));
    let killed_at = Arc::new(std::sync::Mutex::new(None::<u64>));
    let watchdog = {
        let (done, killed_at) = (done.clone(), killed_at.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                match status_kib(pid, "VmRSS") {
                    Some(rss) if rss > 1 << 20 => {
                        let _ = Command::new("kill")
                            .args(["-KILL", &pid.to_string()])
                            .status();
                        *killed_at.lock().unwrap() = Some(rss >> 10);
                        return;
                    }
                    Some(_) => std::thread::sleep(Duration::from_millis(5)),
                    None => return,
                }
            }
        })
    };

    let bomb = idconsent_e2e::pdf::object_stream_bomb(2048, 1 << 20);
    assert!(bomb.len() < 16 << 10, "{} bytes", bomb.len());
    let body = serde_json::to_vec(&serde_json::json!({
        "document": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &bomb),
        "signers": [{"email": "ann@example.com", "name": "Ann"}],
    }))
    .unwrap();
    let started = std::time::Instant::now();
    let answer = app
        .signed_to(
            &format!("http://{address}"),
            reqwest::Method::POST,
            "/v1/signature/documents",
            &application.sandbox_key,
            &application.secret,
            &body,
            app.signing_millis(),
        )
        .send()
        .await;
    let elapsed = started.elapsed();
    let peak = status_kib(pid, "VmHWM");
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
    if let Some(rss) = *killed_at.lock().unwrap() {
        panic!("the server passed 1 GiB of resident memory ({rss} MiB) and was killed");
    }
    let answer = answer.unwrap();
    let status = answer.status().as_u16();
    let refused: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["details"][0]["field"], "document", "{refused}");
    assert!(
        elapsed < Duration::from_secs(5),
        "answered after {elapsed:?}"
    );
    let peak_mib = peak.unwrap() >> 10;
    eprintln!(
        "hostile PDF of {} bytes: {status} after {elapsed:?}; the server's peak RSS {peak_mib} MiB",
        bomb.len()
    );
    assert!(
        peak_mib < SERVER_PEAK_RSS_MIB,
        "the server's peak RSS was {peak_mib} MiB"
    );
    drop(server);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_pdf_leaves_the_server_within_its_memory_bound_on_sqlite() {
    a_hostile_pdf_leaves_the_server_within_its_memory_bound(idconsent_e2e::Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_pdf_leaves_the_server_within_its_memory_bound_on_postgres() {
    a_hostile_pdf_leaves_the_server_within_its_memory_bound(idconsent_e2e::Backend::Postgres).await;
}
