//! `webhook-listen`: a development webhook endpoint that checks Standard Webhooks signatures
//! (CONTRACT §8) and prints each event. What a merchant's own endpoint does, in 200 lines.

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// Standard Webhooks' recommended tolerance for `webhook-timestamp`.
const TOLERANCE_SECS: i64 = 5 * 60;
const MAX_BODY: usize = 1024 * 1024;
const MAX_HEAD_LINES: usize = 100;

/// One request as checked.
#[derive(Debug, Clone)]
pub struct Checked {
    pub id: String,
    pub event_type: String,
    pub data: Value,
    /// `None` when the signature verifies and the timestamp is fresh; else why not.
    pub problem: Option<String>,
}

impl Checked {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "type": self.event_type,
            "verified": self.problem.is_none(),
            "problem": self.problem,
            "data": self.data,
        })
    }
}

/// Checks one delivery: signature over `id.timestamp.body` with `secret`, timestamp within
/// five minutes of `now`, `webhook-id` equal to the body's `id`.
pub fn check(secret: &str, headers: &[(String, String)], body: &[u8], now_secs: i64) -> Checked {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut checked = Checked {
        id: header("webhook-id").unwrap_or_default().to_owned(),
        event_type: parsed["type"].as_str().unwrap_or("?").to_owned(),
        data: parsed["data"].clone(),
        problem: None,
    };
    let (Some(id), Some(timestamp), Some(signature)) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    ) else {
        checked.problem = Some("missing webhook-id, webhook-timestamp or webhook-signature".into());
        return checked;
    };
    let Ok(timestamp) = timestamp.trim().parse::<i64>() else {
        checked.problem = Some("webhook-timestamp is not a number".into());
        return checked;
    };
    if !idconsent_auth_hmac::verify_webhook(secret, id, timestamp, body, signature) {
        checked.problem = Some("signature does not verify with this secret".into());
    } else if (now_secs - timestamp).abs() > TOLERANCE_SECS {
        checked.problem = Some("webhook-timestamp is more than 5 minutes off".into());
    } else if parsed["id"].as_str() != Some(id) {
        checked.problem = Some("webhook-id differs from the body's id".into());
    }
    checked
}

/// Options of `webhook-listen`.
#[derive(Debug, Clone)]
pub struct Listen {
    pub host: String,
    pub port: u16,
    pub secret: String,
    /// Stop once an event of each of these types has arrived (verified).
    pub until: Vec<String>,
    pub json: bool,
}

/// Serves until every `until` type has arrived (forever when empty).
pub fn run(options: Listen) -> anyhow::Result<()> {
    if idconsent_auth_hmac::webhook_key(&options.secret).is_err() {
        bail!("--secret must be a webhook secret: whsec_ followed by base64");
    }
    let listener = TcpListener::bind((options.host.as_str(), options.port))
        .with_context(|| format!("cannot listen on {}:{}", options.host, options.port))?;
    let address = listener.local_addr().context("no local address")?;
    let url = format!("http://{address}/hooks");
    if options.json {
        say!("{}", json!({"listening": url}));
    } else {
        say!("Listening for webhooks on {url} (any path); verifying with the whsec_ secret");
    }
    flush();

    let (events, arrived) = mpsc::channel::<Checked>();
    let secret = options.secret.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let events = events.clone();
            let secret = secret.clone();
            std::thread::spawn(move || serve(stream, &secret, &events));
        }
    });

    let mut waiting: BTreeSet<String> = options.until.iter().cloned().collect();
    let stop_when_done = !waiting.is_empty();
    for event in arrived {
        if options.json {
            say!("{}", event.to_json());
        } else {
            print_human(&event);
        }
        flush();
        if event.problem.is_none() {
            waiting.remove(&event.event_type);
        }
        if stop_when_done && waiting.is_empty() {
            return Ok(());
        }
    }
    bail!("the listener stopped")
}

fn print_human(event: &Checked) {
    match &event.problem {
        None => say!("<- {} {}  signature verified", event.event_type, event.id),
        Some(problem) => say!(
            "<- {} {}  REFUSED (401): {problem}",
            event.event_type,
            event.id
        ),
    }
    let data = serde_json::to_string_pretty(&event.data).unwrap_or_default();
    for line in data.lines() {
        say!("   {line}");
    }
}

fn flush() {
    let _ = std::io::stdout().flush();
}

/// One connection: HTTP/1.1 requests with `Content-Length` bodies, kept alive.
fn serve(stream: TcpStream, secret: &str, events: &mpsc::Sender<Checked>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
            if headers.len() >= MAX_HEAD_LINES {
                let _ = respond(&mut writer, 431, "Request Header Fields Too Large");
                return;
            }
            if let Some((name, value)) = line.trim_end().split_once(':') {
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
            }
        }
        let length = headers
            .iter()
            .find(|(name, _)| name == "content-length")
            .and_then(|(_, value)| value.parse::<usize>().ok());
        let method = request_line.split(' ').next().unwrap_or_default();
        if method != "POST" {
            let _ = respond(&mut writer, 405, "Method Not Allowed");
            return;
        }
        let Some(length) = length.filter(|length| *length <= MAX_BODY) else {
            let _ = respond(&mut writer, 411, "Length Required");
            return;
        };
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let checked = check(secret, &headers, &body, now_secs());
        let answered = if checked.problem.is_none() {
            respond(&mut writer, 204, "No Content")
        } else {
            respond(&mut writer, 401, "Unauthorized")
        };
        if events.send(checked).is_err() || answered.is_err() {
            return;
        }
    }
}

fn respond(writer: &mut TcpStream, status: u16, reason: &str) -> std::io::Result<()> {
    writer
        .write_all(format!("HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\n\r\n").as_bytes())?;
    writer.flush()
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() as i64)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The worked example of `vectors.json` → `webhook_signing` (CONTRACT §8).
    fn vector() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/vectors/vectors.json"
        );
        let vectors: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        vectors["webhook_signing"].clone()
    }

    fn headers(id: &str, timestamp: i64, signature: &str) -> Vec<(String, String)> {
        vec![
            ("webhook-id".into(), id.into()),
            ("webhook-timestamp".into(), timestamp.to_string()),
            ("webhook-signature".into(), signature.into()),
        ]
    }

    #[test]
    fn a_signed_event_verifies_and_a_tampered_one_does_not() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"id":"evt_1","type":"consent.approved","createdAt":"2026-11-21T10:00:00.000Z","data":{"sessionId":"cs_1"}}"#;
        let now = 1_763_719_200;
        let signature = idconsent_auth_hmac::sign_webhook(secret, "evt_1", now, body).unwrap();

        let checked = check(secret, &headers("evt_1", now, &signature), body, now + 3);
        assert_eq!(checked.problem, None);
        assert_eq!(checked.event_type, "consent.approved");
        assert_eq!(checked.data["sessionId"], "cs_1");

        let mut tampered = body.to_vec();
        let last = tampered.len() - 3;
        tampered[last] = b'2';
        assert!(
            check(secret, &headers("evt_1", now, &signature), &tampered, now)
                .problem
                .is_some()
        );
        assert!(
            check(
                "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                &headers("evt_1", now, &signature),
                body,
                now
            )
            .problem
            .is_some()
        );
        let stale = check(secret, &headers("evt_1", now, &signature), body, now + 301);
        assert!(stale.problem.unwrap().contains("5 minutes"));
        assert!(check(secret, &[], body, now).problem.is_some());
    }

    #[test]
    fn the_shared_vector_verifies() {
        let vector = vector();
        let text = |key: &str| vector[key].as_str().unwrap().to_owned();
        let timestamp: i64 = text("webhookTimestamp").parse().unwrap();
        let body = text("body");
        let headers = headers(&text("webhookId"), timestamp, &text("signatureHeader"));
        let checked = check(&text("secret"), &headers, body.as_bytes(), timestamp);
        assert_eq!(checked.problem, None);
        assert_eq!(checked.event_type, "consent.approved");
    }
}
