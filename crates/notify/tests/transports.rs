//! The MessageTransport contract against real local receivers: a minimal SMTP server and a
//! minimal HTTP SMS gateway, both speaking real protocol over TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use idconsent_notification::transport_contract::{Received, ReceiverMode, TransportHarness};
use idconsent_notification::{Address, MessageTransport};
use idconsent_notify::{HttpSms, HttpSmsConfig, SmtpEmail};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

type Log = Arc<Mutex<Vec<Received>>>;

fn reader(log: &Log) -> Box<dyn Fn() -> Vec<Received> + Send + Sync> {
    let log = log.clone();
    Box::new(move || log.lock().unwrap().clone())
}

async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

// ---------------------------------------------------------------- SMTP

async fn smtp_receiver(mode: ReceiverMode, log: Log) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut lines = BufReader::new(read).lines();
                write
                    .write_all(b"220 localhost ESMTP test\r\n")
                    .await
                    .unwrap();
                let mut to = String::new();
                while let Ok(Some(line)) = lines.next_line().await {
                    let upper = line.to_ascii_uppercase();
                    let reply: &[u8] = if upper.starts_with("EHLO") {
                        b"250-localhost\r\n250 8BITMIME\r\n"
                    } else if upper.starts_with("RCPT TO:") {
                        to = line[8..].trim().trim_matches(['<', '>']).to_owned();
                        match mode {
                            ReceiverMode::Accept => b"250 2.1.5 OK\r\n",
                            ReceiverMode::FailTemporarily => b"451 4.3.0 try again later\r\n",
                            ReceiverMode::Reject => b"550 5.1.1 no such user\r\n",
                        }
                    } else if upper == "DATA" {
                        write.write_all(b"354 go ahead\r\n").await.unwrap();
                        let mut raw = String::new();
                        while let Ok(Some(data)) = lines.next_line().await {
                            if data == "." {
                                break;
                            }
                            raw.push_str(&data);
                            raw.push('\n');
                        }
                        log.lock().unwrap().push(Received {
                            to: to.clone(),
                            raw,
                        });
                        b"250 2.0.0 queued\r\n"
                    } else if upper == "QUIT" {
                        let _ = write.write_all(b"221 bye\r\n").await;
                        return;
                    } else {
                        b"250 OK\r\n"
                    };
                    if write.write_all(reply).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

struct Smtp;

#[async_trait]
impl TransportHarness for Smtp {
    fn address(&self) -> Address {
        Address::parse("ops@merchant.example").unwrap()
    }

    async fn start(
        &self,
        mode: ReceiverMode,
    ) -> (
        Arc<dyn MessageTransport>,
        Box<dyn Fn() -> Vec<Received> + Send + Sync>,
    ) {
        let log = Log::default();
        let port = smtp_receiver(mode, log.clone()).await;
        let transport = smtp_transport(port);
        (transport, reader(&log))
    }

    async fn unreachable(&self) -> Arc<dyn MessageTransport> {
        smtp_transport(closed_port().await)
    }
}

fn smtp_transport(port: u16) -> Arc<dyn MessageTransport> {
    Arc::new(
        SmtpEmail::new(
            &format!("smtp://127.0.0.1:{port}"),
            "idconsent <no-reply@idconsent.example>",
            Duration::from_secs(5),
        )
        .unwrap(),
    )
}

mod smtp {
    idconsent_notification::message_transport_contract!(super::Smtp);
}

// ---------------------------------------------------------------- HTTP SMS gateway

async fn http_receiver(mode: ReceiverMode, log: Log) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let log = log.clone();
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
                    head.push_str(&line);
                }
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                let mut body = vec![0; length];
                stream.read_exact(&mut body).await.unwrap();
                let body = String::from_utf8(body).unwrap();
                let json: serde_json::Value = serde_json::from_str(&body).unwrap();
                let status = match mode {
                    ReceiverMode::Accept => {
                        log.lock().unwrap().push(Received {
                            to: json["to"].as_str().unwrap().to_owned(),
                            raw: format!("{head}\n{}", json["body"].as_str().unwrap()),
                        });
                        "200 OK"
                    }
                    ReceiverMode::FailTemporarily => "503 Service Unavailable",
                    ReceiverMode::Reject => "400 Bad Request",
                };
                let response =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                let _ = stream.get_mut().write_all(response.as_bytes()).await;
            });
        }
    });
    port
}

struct Sms;

fn sms_transport(port: u16) -> Arc<dyn MessageTransport> {
    Arc::new(
        HttpSms::new(&HttpSmsConfig {
            url: format!("http://127.0.0.1:{port}/messages"),
            auth_header: Some("Authorization: Bearer gateway-token".into()),
            timeout: Duration::from_secs(5),
        })
        .unwrap(),
    )
}

#[async_trait]
impl TransportHarness for Sms {
    fn address(&self) -> Address {
        Address::parse("+15551234567").unwrap()
    }

    async fn start(
        &self,
        mode: ReceiverMode,
    ) -> (
        Arc<dyn MessageTransport>,
        Box<dyn Fn() -> Vec<Received> + Send + Sync>,
    ) {
        let log = Log::default();
        let port = http_receiver(mode, log.clone()).await;
        (sms_transport(port), reader(&log))
    }

    async fn unreachable(&self) -> Arc<dyn MessageTransport> {
        sms_transport(closed_port().await)
    }
}

mod http_sms {
    idconsent_notification::message_transport_contract!(super::Sms);

    #[tokio::test]
    async fn the_configured_auth_header_and_json_body_are_sent() {
        use idconsent_notification::transport_contract::TransportHarness;
        let (transport, received) = super::Sms.start(super::ReceiverMode::Accept).await;
        let message = idconsent_notification::Message {
            id: idconsent_kernel::id::TypedId::parse("msg_01JDKXA1B2C3D4E5F6G7H8J9K0").unwrap(),
            to: super::Sms.address(),
            subject: "Code".into(),
            body: "Your code is 135790".into(),
            code: Some("135790".into()),
            link: None,
            status: idconsent_notification::DeliveryStatus::Queued,
            attempts: 0,
            last_error: None,
            next_attempt_at: idconsent_kernel::Timestamp::from_millis(0),
            created_at: idconsent_kernel::Timestamp::from_millis(0),
            delivered_at: None,
        };
        transport.deliver(&message).await.unwrap();
        let raw = received().remove(0).raw.to_ascii_lowercase();
        assert!(raw.starts_with("post /messages http/1.1"), "{raw}");
        assert!(raw.contains("authorization: bearer gateway-token"), "{raw}");
        assert!(raw.contains("content-type: application/json"), "{raw}");
    }
}

#[test]
fn bad_configuration_is_refused_at_start() {
    assert!(SmtpEmail::new("ftp://x", "a@b.example", Duration::from_secs(1)).is_err());
    assert!(
        SmtpEmail::new(
            "smtp://127.0.0.1:25",
            "not a mailbox",
            Duration::from_secs(1)
        )
        .is_err()
    );
    let config = |url: &str, header: Option<&str>| HttpSmsConfig {
        url: url.into(),
        auth_header: header.map(Into::into),
        timeout: Duration::from_secs(1),
    };
    assert!(HttpSms::new(&config("file:///etc/passwd", None)).is_err());
    assert!(HttpSms::new(&config("https://sms.example/send", Some("no colon"))).is_err());
    assert!(HttpSms::new(&config("https://sms.example/send", Some("X-Key: abc"))).is_ok());
}
