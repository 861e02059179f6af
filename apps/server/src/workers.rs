//! Background workers: loops that poll on an interval, wake early when nudged, and stop when
//! the server shuts down.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use idconsent_kernel::{OsRandom, RandomSource, storage_unavailable};

use crate::config::Config;
use crate::errors::chain;
use crate::health::DatabaseHealth;
use crate::wiring::Background;

/// Why a worker round failed: what it was doing, and the error.
pub(crate) struct RoundError {
    what: &'static str,
    error: Box<dyn std::error::Error + Send + Sync>,
}

fn failed(what: &'static str, error: impl std::error::Error + Send + Sync + 'static) -> RoundError {
    RoundError {
        what,
        error: Box::new(error),
    }
}

/// How long the webhook worker lets outbox writes gather before a round that follows a partial
/// one: a few milliseconds of delivery latency buy one lease per batch instead of one per request.
const WEBHOOK_BATCH_WINDOW: Duration = Duration::from_millis(5);

/// Tasks a worker started that outlive its round (webhook attempts): aborted together when the
/// process is killed, as a crash would end them.
pub type Attempts = Arc<std::sync::Mutex<tokio::task::JoinSet<()>>>;

/// Starts every background worker, each with the services it drives.
pub fn spawn_all(
    background: &Background,
    config: &Config,
    health: &Arc<DatabaseHealth>,
    shutdown: &watch::Receiver<bool>,
    attempts: &Attempts,
) -> Vec<JoinHandle<()>> {
    let interval = config.worker_poll_interval;
    let requests = background.requests.clone();
    let endusers = background.endusers.clone();
    let send_limits = background.send_limits.clone();
    let hosted = background.hosted.clone();
    let maintenance = spawn_loop(
        "maintenance",
        Duration::from_secs(60),
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let (requests, endusers, send_limits, hosted) = (
                requests.clone(),
                endusers.clone(),
                send_limits.clone(),
                hosted.clone(),
            );
            async move {
                // Replay fingerprints and idempotency keys only matter until they expire.
                requests.forget_expired().await.map_err(|error| {
                    failed(
                        "forgetting expired request fingerprints or idempotency keys",
                        error,
                    )
                })?;
                send_limits
                    .forget_old()
                    .await
                    .map_err(|error| failed("forgetting old send-limit counters", error))?;
                endusers
                    .forget_expired_challenges()
                    .await
                    .map_err(|error| failed("forgetting expired FIDO challenges", error))?;
                hosted
                    .forget_expired()
                    .await
                    .map_err(|error| failed("forgetting hosted-page confirmations", error))?;
                Ok(0)
            }
        },
    );
    let webhooks = background.webhooks.clone();
    let in_flight = attempts.clone();
    // Whether the last round started a full lane: then more is due at once; otherwise wait a
    // moment so that the outbox writes of many requests are leased in one round, not one each.
    let last_round_full = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Each attempt runs on its own task within the dispatcher's lanes, so a receiver that hangs
    // holds only its own attempts; an attempt that ends wakes this loop to fill its lane again.
    let deliver = spawn_loop(
        "webhooks",
        interval,
        background.wake.webhooks.clone(),
        shutdown.clone(),
        health.clone(),
        move || {
            let (webhooks, in_flight, last_round_full) =
                (webhooks.clone(), in_flight.clone(), last_round_full.clone());
            async move {
                if !last_round_full.load(std::sync::atomic::Ordering::Relaxed) {
                    tokio::time::sleep(WEBHOOK_BATCH_WINDOW).await;
                }
                let round = webhooks
                    .start_due()
                    .await
                    .map_err(|error| failed("webhook delivery round", error))?;
                if let Some(handed_back) = &round.handed_back {
                    // Nothing was sent or recorded for them: due again in a moment, here or in
                    // another process (issue 31 §11).
                    tracing::warn!(
                        deliveries = handed_back.deliveries,
                        applications = handed_back.applications,
                        due_again_at = %handed_back.due_again_at,
                        error = %chain(&handed_back.cause),
                        "webhook signing secrets could not be read; deliveries handed back unattempted"
                    );
                }
                let attempts = round.attempts;
                let started = attempts.len();
                last_round_full.store(
                    started >= webhooks.round_size(),
                    std::sync::atomic::Ordering::Relaxed,
                );
                let mut tasks = in_flight.lock().unwrap_or_else(|p| p.into_inner());
                // Reap the finished ones, so the set holds only what is in flight.
                while tasks.try_join_next().is_some() {}
                for attempt in attempts {
                    tasks.spawn(async move {
                        if let Err(error) = attempt.await {
                            // The lease ends and the delivery is attempted again.
                            tracing::warn!(error = %chain(&error), "recording a webhook attempt failed");
                        }
                    });
                }
                Ok(started)
            }
        },
    );
    let consents = background.consents.clone();
    // Polled, not woken: expiry is time passing. The poll interval bounds how late a
    // `consent.expired` event can be.
    let expire = spawn_loop(
        "consent-expiry",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let consents = consents.clone();
            async move {
                consents
                    .expire_due()
                    .await
                    .map_err(|error| failed("consent expiry round", error))
            }
        },
    );
    let oauth_keys = background.oauth_keys.clone();
    // Polled: another process may rotate the shared signing keys at any time.
    let reload_keys = spawn_loop(
        "oauth-keys",
        oauth_keys.reload_interval(),
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let oauth_keys = oauth_keys.clone();
            async move {
                oauth_keys
                    .reload()
                    .await
                    .map_err(|error| failed("reloading the OAuth signing keys", error))?;
                Ok(0)
            }
        },
    );
    let recoveries = background.endusers.clone();
    // Polled, not woken: a recovery ends when its time comes.
    let recover = spawn_loop(
        "device-recovery",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let recoveries = recoveries.clone();
            async move {
                recoveries
                    .activate_due_recoveries()
                    .await
                    .map_err(|error| failed("activating recovered devices", error))
            }
        },
    );
    let signatures = background.signatures.clone();
    // Polled, not woken: expiry is time passing; each expiry is a compare-and-swap, so several
    // processes may sweep at once.
    let expire_signatures = spawn_loop(
        "signature-expiry",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let signatures = signatures.clone();
            async move {
                signatures
                    .expire_due()
                    .await
                    .map_err(|error| failed("signature expiry round", error))
            }
        },
    );
    let mandates = background.mandates.clone();
    // Polled like the signature sweeper; each expiry is a compare-and-swap on the version.
    let expire_mandates = spawn_loop(
        "mandate-expiry",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let mandates = mandates.clone();
            async move {
                mandates
                    .expire_due()
                    .await
                    .map_err(|error| failed("mandate expiry round", error))
            }
        },
    );
    // Identity analyses: each loop takes one job at a time (a lease in the database, so every
    // process may run them); woken by a submission, else polled for jobs a dead process left.
    let analyses = (0..config.identity.workers).map(|_| {
        let identity = background.identity.clone();
        spawn_loop(
            "identity-analysis",
            interval,
            background.wake.identity.clone(),
            shutdown.clone(),
            health.clone(),
            move || {
                let identity = identity.clone();
                async move {
                    identity
                        .analyse_due(1)
                        .await
                        .map_err(|error| failed("identity analysis", error))
                }
            },
        )
    });
    let analyses: Vec<_> = analyses.collect();
    let identity = background.identity.clone();
    // Every process, analysing or not: images a crash, a cut-off request or a failed delete left
    // behind (docs/security.md). Deleting twice is fine, so several processes may sweep at once.
    let sweep_images = spawn_loop(
        "identity-image-sweep",
        config.identity.image_sweep_interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let identity = identity.clone();
            async move {
                let deleted = identity
                    .sweep_orphaned_images()
                    .await
                    .map_err(|error| failed("sweeping orphaned identity images", error))?;
                if deleted > 0 {
                    tracing::info!(deleted, "orphaned identity images deleted");
                }
                Ok(deleted)
            }
        },
    );
    let billing = background.billing.clone();
    // Closes last month on the 1st (a no-op once an invoice exists, so several processes may
    // run it) and stores invoices that became overdue.
    let billing_schedule = spawn_loop(
        "billing-schedule",
        interval.saturating_mul(10),
        Arc::new(Notify::new()),
        shutdown.clone(),
        health.clone(),
        move || {
            let billing = billing.clone();
            async move {
                let closed = billing
                    .run_schedule()
                    .await
                    .map_err(|error| failed("billing schedule", error))?;
                if closed.issued > 0 {
                    tracing::info!(period = %closed.period, issued = closed.issued, "invoices issued");
                }
                Ok(0)
            }
        },
    );
    let report_calls = spawn_call_reports(background, shutdown.clone(), interval);
    let dispatcher = background.notifications.clone();
    let notify = spawn_loop(
        "notifications",
        interval,
        background.wake.notifications.clone(),
        shutdown.clone(),
        health.clone(),
        move || {
            let dispatcher = dispatcher.clone();
            async move {
                let report = dispatcher
                    .dispatch_due()
                    .await
                    .map_err(|error| failed("notification dispatch", error))?;
                if report.handled() > 0 {
                    tracing::info!(
                        delivered = report.delivered,
                        retried = report.retried,
                        failed = report.failed,
                        "notifications dispatched"
                    );
                }
                Ok(report.handled())
            }
        },
    );
    let mut workers = vec![
        sweep_images,
        billing_schedule,
        report_calls,
        expire_mandates,
        expire_signatures,
        recover,
        reload_keys,
        maintenance,
        deliver,
        expire,
        notify,
    ];
    workers.extend(analyses);
    workers
}

/// Reports the live API calls the rate-limit gate counted, every few seconds and once more at
/// shutdown, so the usage summary misses at most the last few seconds of another process.
fn spawn_call_reports(
    background: &Background,
    mut shutdown: watch::Receiver<bool>,
    interval: Duration,
) -> JoinHandle<()> {
    let gate = background.rate_limits.clone();
    let every = interval.saturating_mul(5).min(Duration::from_secs(5));
    tokio::spawn(async move {
        loop {
            let stopping = tokio::select! {
                _ = tokio::time::sleep(every) => false,
                changed = shutdown.changed() => changed.is_err() || *shutdown.borrow(),
            };
            if let Err(error) = gate.flush().await {
                tracing::warn!(error = %chain(&error), "reporting API calls failed");
            }
            if stopping {
                break;
            }
        }
    })
}

/// The longest a worker waits between rounds while the database is away.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Runs `round` until shutdown: again at once while it finds work, otherwise after `interval`
/// or when `wake` is notified. While the database is unreachable it backs off — doubling the
/// wait up to [`MAX_BACKOFF`], with jitter so processes do not return in step — and reports to
/// `health`, which logs the outage once and the return once.
pub(crate) fn spawn_loop<F, Fut>(
    name: &'static str,
    interval: Duration,
    wake: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
    health: Arc<DatabaseHealth>,
    round: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<usize, RoundError>> + Send,
{
    tokio::spawn(async move {
        tracing::debug!(worker = name, "worker started");
        let mut failures: u32 = 0;
        loop {
            if *shutdown.borrow() {
                break;
            }
            let wait = match round().await {
                Ok(handled) => {
                    health.answered(name);
                    failures = 0;
                    if handled > 0 {
                        continue;
                    }
                    interval
                }
                Err(RoundError { what, error }) => match storage_unavailable(&*error) {
                    Some(unavailable) => {
                        health.unreachable(name, &unavailable.reason);
                        failures = failures.saturating_add(1);
                        backoff(interval, failures)
                    }
                    None => {
                        tracing::warn!(worker = name, error = %chain(&*error), "{what} failed");
                        interval
                    }
                },
            };
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(wait) => {}
                // A dropped sender (the server value went away without `stop`) also ends the loop.
                changed = shutdown.changed() => if changed.is_err() { break },
            }
        }
        tracing::debug!(worker = name, "worker stopped");
    })
}

/// `interval` doubled per failure in a row, at most [`MAX_BACKOFF`], then between half and all
/// of that (full jitter keeps several processes from retrying in step).
fn backoff(interval: Duration, failures: u32) -> Duration {
    let doubled = interval.saturating_mul(1 << failures.min(16));
    let ceiling = doubled.min(MAX_BACKOFF).max(Duration::from_millis(1));
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX / 4);
    let random: &dyn RandomSource = &OsRandom;
    let jitter = random.below(millis / 2 + 1);
    Duration::from_millis(millis / 2 + jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_ceiling_with_jitter() {
        let interval = Duration::from_millis(100);
        for failures in 1..40 {
            let wait = backoff(interval, failures);
            let ceiling = interval
                .saturating_mul(1 << failures.min(16))
                .min(MAX_BACKOFF);
            assert!(
                wait <= ceiling && wait >= ceiling / 2,
                "{failures}: {wait:?}"
            );
        }
    }
}
