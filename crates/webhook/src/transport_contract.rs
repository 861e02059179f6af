//! The [`WebhookTransport`] contract, run against a real local receiver.
//!
//! A harness gives a transport that may post to private addresses (the local receiver lives on
//! 127.0.0.1) and one that must not; the receiver records what arrives and answers with the
//! status it is told.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::ports::{PostOutcome, WebhookRequest, WebhookTransport};

/// One request as the receiver saw it: lower-case header names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Status(u16),
    /// Holds the connection open without answering.
    Hang,
}

#[async_trait]
pub trait TransportHarness: Send + Sync {
    /// A receiver on 127.0.0.1 answering `answer`; its URL and what it has seen.
    async fn receiver(&self, answer: Answer) -> (String, Arc<dyn Fn() -> Vec<Seen> + Send + Sync>);
    /// A transport allowed to reach private addresses.
    fn permissive(&self) -> Arc<dyn WebhookTransport>;
    /// A transport that refuses private addresses.
    fn guarded(&self) -> Arc<dyn WebhookTransport>;
}

#[macro_export]
macro_rules! webhook_transport_contract {
    ($harness:expr) => {
        $crate::webhook_transport_contract!(@cases $harness;
            headers_and_body_arrive_exactly,
            a_server_error_is_an_answer,
            a_silent_receiver_times_out,
            a_closed_port_is_no_answer,
            private_targets_are_refused_when_guarded,
        );
    };
    (@cases $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::transport_contract::$case(&$harness).await;
            }
        )*
    };
}

fn request(url: &str, timeout: Duration) -> WebhookRequest {
    WebhookRequest {
        url: url.to_owned(),
        headers: vec![
            ("content-type", "application/json".into()),
            ("webhook-id", "evt_01JDKXB2C3D4E5F6G7H8J9K0LM".into()),
            ("webhook-timestamp", "1763719260".into()),
            ("webhook-signature", "v1,abc=".into()),
        ],
        body: br#"{"id":"evt_01JDKXB2C3D4E5F6G7H8J9K0LM","type":"consent.approved"}"#.to_vec(),
        timeout,
    }
}

pub async fn headers_and_body_arrive_exactly(harness: &dyn TransportHarness) {
    let (url, seen) = harness.receiver(Answer::Status(204)).await;
    let sent = request(&format!("{url}/hooks?x=1"), Duration::from_secs(5));
    let outcome = harness.permissive().post(sent.clone()).await;
    assert!(
        matches!(outcome, PostOutcome::Answered { status: 204, .. }),
        "{outcome:?}"
    );
    let got = seen();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, sent.body);
    for (name, value) in &sent.headers {
        assert!(
            got[0].headers.iter().any(|(n, v)| n == name && v == value),
            "{name} missing: {:?}",
            got[0].headers
        );
    }
}

pub async fn a_server_error_is_an_answer(harness: &dyn TransportHarness) {
    let (url, _) = harness.receiver(Answer::Status(500)).await;
    let outcome = harness
        .permissive()
        .post(request(&url, Duration::from_secs(5)))
        .await;
    assert!(
        matches!(outcome, PostOutcome::Answered { status: 500, .. }),
        "{outcome:?}"
    );
}

// The point is that the transport's deadline holds in real time.
#[allow(clippy::disallowed_methods)]
pub async fn a_silent_receiver_times_out(harness: &dyn TransportHarness) {
    let (url, _) = harness.receiver(Answer::Hang).await;
    let started = std::time::Instant::now();
    let outcome = harness
        .permissive()
        .post(request(&url, Duration::from_millis(300)))
        .await;
    assert!(
        matches!(&outcome, PostOutcome::NoAnswer { error, .. } if error.contains("timed out")),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

pub async fn a_closed_port_is_no_answer(harness: &dyn TransportHarness) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    drop(listener);
    let outcome = harness
        .permissive()
        .post(request(&url, Duration::from_secs(2)))
        .await;
    assert!(
        matches!(outcome, PostOutcome::NoAnswer { .. }),
        "{outcome:?}"
    );
}

pub async fn private_targets_are_refused_when_guarded(harness: &dyn TransportHarness) {
    let (url, seen) = harness.receiver(Answer::Status(200)).await;
    let localhost = url.replace("127.0.0.1", "localhost");
    for target in [
        url.clone(),
        localhost,
        "http://169.254.169.254/latest/meta-data".to_owned(),
    ] {
        let outcome = harness
            .guarded()
            .post(request(&target, Duration::from_secs(2)))
            .await;
        assert!(
            matches!(&outcome, PostOutcome::NoAnswer { error, .. } if error.contains("private")),
            "{target}: {outcome:?}"
        );
    }
    assert!(seen().is_empty(), "nothing reached the receiver");
}
