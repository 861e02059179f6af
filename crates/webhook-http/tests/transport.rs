//! The WebhookTransport contract against a real local HTTP receiver.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use idconsent_webhook::WebhookTransport;
use idconsent_webhook::transport_contract::{Answer, Seen, TransportHarness};
use idconsent_webhook_http::HttpWebhookTransport;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

struct Harness;

#[async_trait]
impl TransportHarness for Harness {
    async fn receiver(&self, answer: Answer) -> (String, Arc<dyn Fn() -> Vec<Seen> + Send + Sync>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    let mut headers = Vec::new();
                    let mut first = true;
                    loop {
                        let mut line = String::new();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if first {
                            first = false;
                            continue;
                        }
                        if let Some((name, value)) = line.trim_end().split_once(':') {
                            headers
                                .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                        }
                    }
                    let length: usize = headers
                        .iter()
                        .find(|(n, _)| n == "content-length")
                        .map(|(_, v)| v.parse().unwrap())
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    stream.read_exact(&mut body).await.unwrap();
                    log.lock().unwrap().push(Seen { headers, body });
                    match answer {
                        Answer::Status(status) => {
                            let response = format!(
                                "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            );
                            let _ = stream.get_mut().write_all(response.as_bytes()).await;
                        }
                        Answer::Hang => {
                            tokio::time::sleep(std::time::Duration::from_secs(30)).await
                        }
                    }
                });
            }
        });
        (url, Arc::new(move || seen.lock().unwrap().clone()))
    }

    fn permissive(&self) -> Arc<dyn WebhookTransport> {
        Arc::new(HttpWebhookTransport::new(true).unwrap())
    }

    fn guarded(&self) -> Arc<dyn WebhookTransport> {
        Arc::new(HttpWebhookTransport::new(false).unwrap())
    }
}

idconsent_webhook::webhook_transport_contract!(Harness);
