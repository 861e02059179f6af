//! A load generator for signed `POST /v1/consents/auth`.
//!
//! Every request is signed (CONTRACT §2.1) and each signature is accepted once, so generic
//! tools (oha, wrk) cannot replay a fixed request. This one signs each request with its own
//! timestamp and a unique recipient, keeps `--connections` requests in flight (one keep-alive
//! connection each) for `--duration` seconds after a warm-up, and prints requests/s, latency
//! percentiles and the non-2xx count. With `--rate` it sends on a fixed schedule instead (open
//! loop) and measures latency from each request's scheduled start.
//!
//! With `--receiver 127.0.0.1:PORT` it also runs a minimal webhook receiver (answers 204,
//! counts requests), so the sessions' `consent.created` webhooks are really delivered, as they
//! are in production; point `--callback-url` at it (the default does).
//!
//! `scripts/load-consents.sh` runs it against the release binary.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use clap::Parser;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Debug, Parser)]
#[command(about = "Signed POST /v1/consents/auth load generator")]
struct Args {
    /// The service, e.g. http://127.0.0.1:8080.
    #[arg(long)]
    url: String,
    /// An `mk_test_` (or `mk_live_`) API key.
    #[arg(long)]
    api_key: String,
    /// The key's `sk_` signing secret.
    #[arg(long)]
    secret: String,
    /// The application's client ID.
    #[arg(long)]
    client_id: String,
    /// Requests kept in flight, one connection each.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Open loop: start requests at this many per second (on schedule, whatever the answers),
    /// and count latency from each request's scheduled start, so a stalled server shows as
    /// latency rather than as fewer requests. Without it, each connection sends its next
    /// request when the previous one is answered (closed loop, like wrk or oha).
    #[arg(long)]
    rate: Option<f64>,
    /// Unmeasured seconds before the measurement (connections open, caches warm).
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Run a counting webhook receiver on this address (answers 204 to everything).
    #[arg(long)]
    receiver: Option<String>,
    /// The sessions' callbackUrl; defaults to the receiver's `/hooks` when there is one.
    #[arg(long)]
    callback_url: Option<String>,
    /// Seconds to wait after the run for the receiver to catch up (0: do not wait).
    #[arg(long, default_value_t = 0.0)]
    drain: f64,
    /// Three digits that start every recipient (`+1555<run><7-digit counter>`), so several runs
    /// against one database never put more than one session on a recipient.
    #[arg(long)]
    run: Option<u16>,
}

/// What one connection saw while measuring.
#[derive(Debug, Default)]
struct Tally {
    /// Microseconds, one per completed request.
    latencies: Vec<u32>,
    statuses: BTreeMap<u16, u64>,
    errors: u64,
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn body(client_id: &str, recipient: &str, callback_url: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "clientId": client_id,
        "recipient": recipient,
        "intent": "LOGIN",
        "callbackUrl": callback_url,
        "transaction": {
            "type": "login",
            "description": "Sign in to Example Shop",
            "amount": 0,
            "currency": "USD",
            "payee": "Example Shop",
        },
    }))
    .unwrap()
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let received = Arc::new(AtomicU64::new(0));
    let receiver_url = match &args.receiver {
        Some(address) => {
            let listener = TcpListener::bind(address).await.unwrap();
            let url = format!("http://{}/hooks", listener.local_addr().unwrap());
            tokio::spawn(receive(listener, received.clone()));
            Some(url)
        }
        None => None,
    };
    let callback_url = args
        .callback_url
        .clone()
        .or(receiver_url)
        .unwrap_or_else(|| "http://127.0.0.1:9/hooks".into());
    let run = args
        .run
        .unwrap_or_else(|| (now_millis() / 1000 % 1000) as u16)
        % 1000;
    let endpoint = format!("{}/v1/consents/auth", args.url.trim_end_matches('/'));

    // One checked request first: the whole run is meaningless if this one fails.
    let client = reqwest::Client::new();
    let counter = Arc::new(AtomicU64::new(0));
    let probe = send(
        &client,
        &endpoint,
        &args,
        &callback_url,
        run,
        counter.fetch_add(1, Ordering::Relaxed),
    )
    .await
    .expect("the probe request failed");
    let (status, bytes) = (probe.status(), probe.bytes().await.unwrap());
    let created: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let qr = created["data"]["qr"].as_str().unwrap_or_default();
    let png = base64::engine::general_purpose::STANDARD
        .decode(qr)
        .unwrap_or_default();
    assert!(
        status.as_u16() == 201 && png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "the probe request was not a 201 with a PNG QR code: {status} {}",
        String::from_utf8_lossy(&bytes)
    );
    println!(
        "probe: 201, response {} bytes, QR PNG {} bytes; callbackUrl {callback_url}",
        bytes.len(),
        png.len()
    );

    // One client per connection, with one idle connection each: exactly one keep-alive
    // connection per task. Built before the schedule starts (TLS setup takes a while).
    let clients: Vec<reqwest::Client> = (0..args.connections)
        .map(|_| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .unwrap()
        })
        .collect();
    let schedule = args
        .rate
        .map(|rate| (Instant::now(), rate, counter.load(Ordering::Relaxed)));
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let args = Arc::new(args);
    let callback_url = Arc::new(callback_url);
    let endpoint = Arc::new(endpoint);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| {
            let (args, callback_url, endpoint) =
                (args.clone(), callback_url.clone(), endpoint.clone());
            let (counter, measuring, stop) = (counter.clone(), measuring.clone(), stop.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                while !stop.load(Ordering::Relaxed) {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let started = match schedule {
                        Some((start, rate, first)) => {
                            let at = start + Duration::from_secs_f64((n - first) as f64 / rate);
                            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                            at
                        }
                        None => Instant::now(),
                    };
                    let outcome = match send(&client, &endpoint, &args, &callback_url, run, n).await
                    {
                        Ok(response) => {
                            let status = response.status().as_u16();
                            response.bytes().await.map(|_| status)
                        }
                        Err(error) => Err(error),
                    };
                    let elapsed = started.elapsed();
                    if !measuring.load(Ordering::Relaxed) {
                        continue;
                    }
                    match outcome {
                        Ok(status) => {
                            *tally.statuses.entry(status).or_default() += 1;
                            tally
                                .latencies
                                .push(u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX));
                        }
                        Err(_) => tally.errors += 1,
                    }
                }
                tally
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    let received_before = received.load(Ordering::Relaxed);
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(args.duration)).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let received_during = received.load(Ordering::Relaxed) - received_before;
    stop.store(true, Ordering::Relaxed);

    let mut total = Tally::default();
    for task in tasks {
        let tally = task.await.unwrap();
        total.latencies.extend(tally.latencies);
        for (status, count) in tally.statuses {
            *total.statuses.entry(status).or_default() += count;
        }
        total.errors += tally.errors;
    }
    report(&args, &total, elapsed, received_during);
    if args.receiver.is_some() && args.drain > 0.0 {
        let created = counter.load(Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs_f64(args.drain);
        while received.load(Ordering::Relaxed) < created && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "webhooks received in all: {} of {} sessions created (drained for {:.1} s)",
            received.load(Ordering::Relaxed),
            created,
            args.drain
        );
    }
}

async fn send(
    client: &reqwest::Client,
    endpoint: &str,
    args: &Args,
    callback_url: &str,
    run: u16,
    n: u64,
) -> Result<reqwest::Response, reqwest::Error> {
    let recipient = format!("+1555{run:03}{:07}", n % 10_000_000);
    let body = body(&args.client_id, &recipient, callback_url);
    let timestamp = now_millis().to_string();
    let signature =
        idconsent_auth_hmac::sign_request(args.secret.as_bytes(), &args.api_key, &timestamp, &body);
    client
        .post(endpoint)
        .header("x-api-key", &args.api_key)
        .header("x-timestamp", timestamp)
        .header("x-signature", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

fn report(args: &Args, total: &Tally, elapsed: f64, webhooks: u64) {
    let mut latencies = total.latencies.clone();
    latencies.sort_unstable();
    let completed = latencies.len() as u64;
    let ok: u64 = total
        .statuses
        .iter()
        .filter(|(status, _)| (200..300).contains(*status))
        .map(|(_, count)| count)
        .sum();
    let non_2xx = completed - ok;
    let mode = match args.rate {
        Some(rate) => format!("open loop at {rate:.0} requests/s"),
        None => "closed loop".to_owned(),
    };
    println!(
        "connections {}, {mode}, measured {elapsed:.1} s (after {:.1} s warm-up)",
        args.connections, args.warmup
    );
    println!(
        "requests {completed}: {:.0} requests/s, {:.0} 2xx/s",
        completed as f64 / elapsed,
        ok as f64 / elapsed
    );
    println!(
        "latency ms: p50 {:.2}, p90 {:.2}, p99 {:.2}, p99.9 {:.2}, max {:.2}",
        percentile(&latencies, 50.0),
        percentile(&latencies, 90.0),
        percentile(&latencies, 99.0),
        percentile(&latencies, 99.9),
        latencies.last().map_or(0.0, |max| f64::from(*max) / 1000.0)
    );
    println!(
        "non-2xx {non_2xx} {:?}, transport errors {}",
        total.statuses, total.errors
    );
    if args.receiver.is_some() {
        println!(
            "webhooks received while measuring: {webhooks} ({:.0}/s)",
            webhooks as f64 / elapsed
        );
    }
}

/// Accepts webhook deliveries: reads each HTTP/1.1 request, answers 204, counts it.
async fn receive(listener: TcpListener, received: Arc<AtomicU64>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(answer(stream, received.clone()));
    }
}

async fn answer(mut stream: TcpStream, received: Arc<AtomicU64>) {
    let mut buffer = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        // Headers, then Content-Length bytes of body; keep-alive until the peer closes.
        let (head_end, length) = loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|value| value.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                break (end + 4, length);
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        while buffer.len() < head_end + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        buffer.drain(..head_end + length);
        received.fetch_add(1, Ordering::Relaxed);
        if stream
            .write_all(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
            .await
            .is_err()
        {
            return;
        }
    }
}
