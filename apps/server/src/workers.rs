//! Background workers: loops that poll on an interval, wake early when nudged, and stop when
//! the server shuts down.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::context::AppContext;

/// Starts every background worker.
pub fn spawn_all(
    context: &Arc<AppContext>,
    shutdown: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    let interval = context.config.worker_poll_interval;
    let dispatcher = context.workers.notifications.clone();
    let requests = context.requests.clone();
    let endusers = context.endusers.clone();
    let send_limits = context.send_limits.clone();
    let maintenance = spawn_loop(
        "maintenance",
        Duration::from_secs(60),
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let (requests, endusers, send_limits) =
                (requests.clone(), endusers.clone(), send_limits.clone());
            async move {
                // Replay fingerprints and idempotency keys only matter until they expire.
                if let Err(error) = requests.forget_expired().await {
                    tracing::warn!(error = %chain(&error), "forgetting expired request fingerprints or idempotency keys failed");
                }
                if let Err(error) = send_limits.forget_old().await {
                    tracing::warn!(error = %chain(&error), "forgetting old send-limit counters failed");
                }
                if let Err(error) = endusers.forget_expired_challenges().await {
                    tracing::warn!(error = %chain(&error), "forgetting expired FIDO challenges failed");
                }
                0
            }
        },
    );
    let webhooks = context.workers.webhooks.clone();
    let deliver = spawn_loop(
        "webhooks",
        interval,
        context.wake.webhooks.clone(),
        shutdown.clone(),
        move || {
            let webhooks = webhooks.clone();
            async move {
                match webhooks.deliver_due().await {
                    Ok(report) => {
                        if report.handled() > 0 {
                            tracing::debug!(
                                succeeded = report.succeeded,
                                retrying = report.retrying,
                                failed = report.failed,
                                "webhooks delivered"
                            );
                        }
                        report.handled()
                    }
                    Err(error) => {
                        tracing::warn!(error = %chain(&error), "webhook delivery round failed");
                        0
                    }
                }
            }
        },
    );
    let consents = context.consents.clone();
    // Polled, not woken: expiry is time passing. The poll interval bounds how late a
    // `consent.expired` event can be.
    let expire = spawn_loop(
        "consent-expiry",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let consents = consents.clone();
            async move {
                match consents.expire_due().await {
                    Ok(expired) => expired,
                    Err(error) => {
                        tracing::warn!(error = %chain(&error), "consent expiry round failed");
                        0
                    }
                }
            }
        },
    );
    let oauth_keys = context.oauth_keys.clone();
    // Polled: another process may rotate the shared signing keys at any time.
    let reload_keys = spawn_loop(
        "oauth-keys",
        oauth_keys.reload_interval(),
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let oauth_keys = oauth_keys.clone();
            async move {
                if let Err(error) = oauth_keys.reload().await {
                    tracing::warn!(error = %chain(&error), "reloading the OAuth signing keys failed");
                }
                0
            }
        },
    );
    let recoveries = context.endusers.clone();
    // Polled, not woken: a recovery ends when its time comes.
    let recover = spawn_loop(
        "device-recovery",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let recoveries = recoveries.clone();
            async move {
                match recoveries.activate_due_recoveries().await {
                    Ok(activated) => activated,
                    Err(error) => {
                        tracing::warn!(error = %chain(&error), "activating recovered devices failed");
                        0
                    }
                }
            }
        },
    );
    let signatures = context.signatures.clone();
    // Polled, not woken: expiry is time passing; each expiry is a compare-and-swap, so several
    // processes may sweep at once.
    let expire_signatures = spawn_loop(
        "signature-expiry",
        interval,
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let signatures = signatures.clone();
            async move {
                match signatures.expire_due().await {
                    Ok(expired) => expired,
                    Err(error) => {
                        tracing::warn!(error = %chain(&error), "signature expiry round failed");
                        0
                    }
                }
            }
        },
    );
    vec![
        expire_signatures,
        recover,
        reload_keys,
        maintenance,
        deliver,
        expire,
        spawn_loop(
            "notifications",
            interval,
            context.wake.notifications.clone(),
            shutdown.clone(),
            move || {
                let dispatcher = dispatcher.clone();
                async move {
                    match dispatcher.dispatch_due().await {
                        Ok(report) => {
                            if report.handled() > 0 {
                                tracing::info!(
                                    delivered = report.delivered,
                                    retried = report.retried,
                                    failed = report.failed,
                                    "notifications dispatched"
                                );
                            }
                            report.handled()
                        }
                        Err(error) => {
                            tracing::warn!(error = %chain(&error), "notification dispatch failed");
                            0
                        }
                    }
                }
            },
        ),
    ]
}

/// An error with all its causes, for one log line.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Runs `round` until shutdown: again at once while it finds work, otherwise after `interval`
/// or when `wake` is notified.
pub(crate) fn spawn_loop<F, Fut>(
    name: &'static str,
    interval: Duration,
    wake: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
    round: F,
) -> JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = usize> + Send,
{
    tokio::spawn(async move {
        tracing::debug!(worker = name, "worker started");
        loop {
            if *shutdown.borrow() {
                break;
            }
            let handled = round().await;
            if handled > 0 {
                continue;
            }
            tokio::select! {
                _ = wake.notified() => {}
                _ = tokio::time::sleep(interval) => {}
                // A dropped sender (the server value went away without `stop`) also ends the loop.
                changed = shutdown.changed() => if changed.is_err() { break },
            }
        }
        tracing::debug!(worker = name, "worker stopped");
    })
}
