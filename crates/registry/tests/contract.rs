//! Both registries pass the BusinessRegistry contract; the HTTP one against a real local
//! provider speaking HTTP over TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_kernel::CalendarDate;
use idconsent_merchant::ports::{BusinessRegistry, RegistryQuery};
use idconsent_merchant::registry_contract::RegistryHarness;
use idconsent_registry::{HttpRegistry, SANDBOX_UNKNOWN_NUMBER, SandboxRegistry};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

fn known() -> RegistryQuery {
    RegistryQuery {
        registration_number: "HRB-12345".into(),
        registered_name: "Example Shop LLC".into(),
        date_registered: CalendarDate::parse("2019-03-04").unwrap(),
    }
}

struct Sandbox;

#[async_trait]
impl RegistryHarness for Sandbox {
    async fn registry(&self) -> Arc<dyn BusinessRegistry> {
        Arc::new(SandboxRegistry)
    }
    fn known(&self) -> RegistryQuery {
        known()
    }
    fn unknown_number(&self) -> String {
        SANDBOX_UNKNOWN_NUMBER.into()
    }
    fn can_mismatch(&self) -> bool {
        false
    }
}

mod sandbox {
    idconsent_merchant::business_registry_contract!(super::Sandbox);
}

/// A provider that knows one company; it checks the auth header.
async fn provider() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/companies/check", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push_str(&line.to_ascii_lowercase());
                }
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                let mut body = vec![0; length];
                stream.read_exact(&mut body).await.unwrap();
                let query: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let (status, answer) = if !head.contains("x-registry-key: secret") {
                    ("401 Unauthorized", serde_json::json!({}))
                } else if query["registrationNumber"] == "HRB-12345" {
                    (
                        "200 OK",
                        serde_json::json!({"found": true, "registeredName": "EXAMPLE SHOP, L.L.C.", "dateRegistered": "2019-03-04"}),
                    )
                } else {
                    ("200 OK", serde_json::json!({"found": false}))
                };
                let answer = answer.to_string();
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                let _ = stream.get_mut().write_all(response.as_bytes()).await;
            });
        }
    });
    url
}

struct Http;

#[async_trait]
impl RegistryHarness for Http {
    async fn registry(&self) -> Arc<dyn BusinessRegistry> {
        Arc::new(HttpRegistry::new(&provider().await, Some("X-Registry-Key: secret")).unwrap())
    }
    fn known(&self) -> RegistryQuery {
        known()
    }
    fn unknown_number(&self) -> String {
        "99999".into()
    }
    fn can_mismatch(&self) -> bool {
        true
    }
}

mod http {
    idconsent_merchant::business_registry_contract!(super::Http);

    #[tokio::test]
    async fn a_refusing_or_absent_provider_is_unavailable() {
        use idconsent_merchant::ports::BusinessRegistry as _;
        let wrong_key = idconsent_registry::HttpRegistry::new(
            &super::provider().await,
            Some("X-Registry-Key: wrong"),
        )
        .unwrap();
        assert!(wrong_key.check(&super::known()).await.is_err());
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", closed.local_addr().unwrap());
        drop(closed);
        let absent = idconsent_registry::HttpRegistry::new(&url, None).unwrap();
        assert!(absent.check(&super::known()).await.is_err());
    }
}
