//! The webhook client never goes through a proxy from the environment: a proxy would make the
//! connection itself, past the check of the resolved address (the SSRF guard).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use idconsent_webhook::{PostOutcome, WebhookRequest, WebhookTransport};
use idconsent_webhook_http::HttpWebhookTransport;

/// Accepts connections on a thread, answering each with `status`; counts them.
fn listener(status: u16) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            seen.fetch_add(1, Ordering::SeqCst);
            let _ = stream.set_read_timeout(Some(Duration::from_millis(300)));
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
        }
    });
    (format!("http://{address}"), count)
}

/// Runs in a child process whose environment names a proxy (see the test below); does nothing
/// when run on its own.
#[tokio::test]
async fn child_posts_one_webhook_to_the_target() {
    let Ok(target) = std::env::var("IDC_PROXY_TEST_TARGET") else {
        return;
    };
    let transport = HttpWebhookTransport::new(true).unwrap();
    let outcome = transport
        .post(WebhookRequest {
            url: format!("{target}/hooks"),
            headers: vec![("content-type", "application/json".to_owned())],
            body: b"{}".to_vec(),
            timeout: Duration::from_secs(5),
        })
        .await;
    assert!(
        matches!(outcome, PostOutcome::Answered { status: 204, .. }),
        "{outcome:?}"
    );
}

#[test]
fn a_proxy_in_the_environment_is_ignored() {
    let (target, delivered) = listener(204);
    let (proxy, proxied) = listener(502);
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_posts_one_webhook_to_the_target",
            "--nocapture",
        ])
        .env("IDC_PROXY_TEST_TARGET", &target)
        .env("HTTP_PROXY", &proxy)
        .env("http_proxy", &proxy)
        .env("HTTPS_PROXY", &proxy)
        .env("ALL_PROXY", &proxy)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .unwrap();
    assert!(child.status.success(), "{child:?}");
    assert!(
        String::from_utf8_lossy(&child.stdout).contains("1 passed"),
        "{child:?}"
    );
    assert_eq!(delivered.load(Ordering::SeqCst), 1, "delivered directly");
    assert_eq!(proxied.load(Ordering::SeqCst), 0, "never through the proxy");
}
