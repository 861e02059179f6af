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

/// Starts `serve` and returns the process with the address it logged.
fn serve(mut command: Command) -> (Child, String, mpsc::Receiver<String>) {
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
    (child, address, receiver)
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
