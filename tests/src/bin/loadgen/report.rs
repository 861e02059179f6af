//! What a run measured, tallied per connection and printed at the end.

use std::collections::BTreeMap;

use crate::Args;

/// What one connection saw while measuring.
#[derive(Debug, Default)]
pub struct Tally {
    /// Microseconds, one per completed request.
    pub latencies: Vec<u32>,
    pub statuses: BTreeMap<u16, u64>,
    pub errors: u64,
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

pub fn report(args: &Args, total: &Tally, elapsed: f64, webhooks: u64) {
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
