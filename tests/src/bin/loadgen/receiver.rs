//! The load generator's webhook receiver: answers every delivery 204 and counts it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Waits until no webhook has arrived for `quiet`.
pub async fn wait_until_quiet(received: &AtomicU64, quiet: Duration) {
    let started = Instant::now();
    let mut last = received.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(quiet).await;
        let now = received.load(Ordering::Relaxed);
        if now == last {
            break;
        }
        last = now;
    }
    println!(
        "webhook backlog drained: {last} received, waited {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Accepts webhook deliveries: reads each HTTP/1.1 request, answers 204, counts it.
pub async fn receive(listener: TcpListener, received: Arc<AtomicU64>) {
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
