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

/// User + system time of `pids` so far, in clock ticks (`/proc/PID/stat` fields 14 and 15);
/// `None` without pids. A process that has ended counts as nothing (a database backend that
/// closed).
pub fn cpu_ticks(pids: &[u32]) -> Option<u64> {
    if pids.is_empty() {
        return None;
    }
    Some(
        pids.iter()
            .filter_map(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                // The command name (field 2) may hold spaces: count fields after its paren.
                let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
                let utime: u64 = fields.get(11)?.parse().ok()?;
                let stime: u64 = fields.get(12)?.parse().ok()?;
                Some(utime + stime)
            })
            .sum(),
    )
}

/// CPU per request of `whose` processes over the measured window alone (every request
/// completed in it, and whatever else they did meanwhile, such as delivering webhooks).
pub fn cpu_per_request(whose: &str, total: &Tally, ticks: u64) {
    // USER_HZ: the kernel reports these times in hundredths of a second on every platform
    // Linux supports today.
    const TICKS_PER_SECOND: u64 = 100;
    let requests = total.latencies.len() as u64;
    if let Some(per_request) = (ticks * 1_000_000 / TICKS_PER_SECOND).checked_div(requests) {
        println!(
            "{whose} CPU while measuring: {per_request} µs per request ({} ms in all)",
            ticks * 1_000 / TICKS_PER_SECOND
        );
    }
}
