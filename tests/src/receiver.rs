//! A real local webhook receiver: an HTTP server on 127.0.0.1 that records every request and
//! answers with scripted statuses.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One webhook as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the request was complete (for delivery-delay measurements).
    pub at: std::time::Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn event_type(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_owned()
    }

    /// Whether the Standard Webhooks signature verifies with `secret`.
    pub fn verifies_with(&self, secret: &str) -> bool {
        let (Some(id), Some(timestamp), Some(signature)) = (
            self.header("webhook-id"),
            self.header("webhook-timestamp")
                .and_then(|t| t.parse().ok()),
            self.header("webhook-signature"),
        ) else {
            return false;
        };
        idconsent_auth_hmac::verify_webhook(secret, id, timestamp, &self.body, signature)
    }
}

#[derive(Debug, Default)]
struct State {
    received: Vec<Received>,
    /// Statuses to answer, in order; `default` once they run out.
    script: VecDeque<u16>,
    default: u16,
}

/// A running receiver.
#[derive(Debug, Clone)]
pub struct Receiver {
    pub url: String,
    state: Arc<Mutex<State>>,
    /// While `false`, requests are read and recorded but not answered.
    open: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Receiver {
    /// Answers 200 to everything.
    pub async fn start() -> Self {
        Self::scripted(&[]).await
    }

    /// Records requests but answers none until [`Receiver::open`]: deliveries stay in flight.
    pub async fn gated() -> Self {
        let receiver = Self::scripted(&[]).await;
        receiver.open.send_replace(false);
        receiver
    }

    /// Answers every request held so far and every one after.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    /// Answers `script` in order, then 200.
    pub async fn scripted(script: &[u16]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State {
            received: Vec::new(),
            script: script.iter().copied().collect(),
            default: 200,
        }));
        let shared = state.clone();
        let (open, gate) = tokio::sync::watch::channel(true);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (state, gate) = (shared.clone(), gate.clone());
                tokio::spawn(async move { serve(stream, state, gate).await });
            }
        });
        Self {
            url,
            state,
            open: Arc::new(open),
        }
    }

    /// From now on, answer `status` (after any remaining script).
    pub fn answer(&self, status: u16) {
        self.state.lock().unwrap().default = status;
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Waits (at most 15 s) until `check` finds what it wants in the received webhooks.
    pub async fn wait_for<T>(&self, mut check: impl FnMut(&[Received]) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(found) = check(&self.received()) {
                return found;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "webhooks not received in time; got {:?}",
                self.received()
                    .iter()
                    .map(Received::event_type)
                    .collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits for an event of `event_type` whose data has `sessionId == session`.
    /// A receiver that accepts connections and never answers: a merchant endpoint that hangs.
    /// Connections stay open for as long as the returned value lives.
    pub async fn hanging() -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        let holder = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        (url, holder)
    }

    pub async fn event(&self, event_type: &str, session: &str) -> Received {
        self.wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == event_type && r.json()["data"]["sessionId"] == session)
                .cloned()
        })
        .await
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    state: Arc<Mutex<State>>,
    mut gate: tokio::sync::watch::Receiver<bool>,
) {
    let mut stream = BufReader::new(stream);
    loop {
        let mut headers = Vec::new();
        let mut request_line = String::new();
        if stream.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut line = String::new();
            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.trim_end().split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if stream.read_exact(&mut body).await.is_err() {
            return;
        }
        let status = {
            let mut state = state.lock().unwrap();
            state.received.push(Received {
                headers,
                body,
                at: std::time::Instant::now(),
            });
            let default = state.default;
            state.script.pop_front().unwrap_or(default)
        };
        if gate.wait_for(|open| *open).await.is_err() {
            return;
        }
        let response = format!("HTTP/1.1 {status} Scripted\r\ncontent-length: 0\r\n\r\n");
        if stream
            .get_mut()
            .write_all(response.as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}
