//! Background workers: loops that poll on an interval, wake early when nudged, and stop when
//! the server shuts down.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use idconsent_merchant::ports::{IdempotencyStore, ReplayGuard};

use crate::context::AppContext;

/// Starts every background worker.
pub fn spawn_all(
    context: &Arc<AppContext>,
    shutdown: &watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    let interval = context.config.worker_poll_interval;
    let dispatcher = context.dispatcher.clone();
    let store = context.merchant_store.clone();
    let endusers = context.endusers.clone();
    let clock = context.clock.clone();
    let maintenance = spawn_loop(
        "maintenance",
        Duration::from_secs(60),
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let (store, endusers, now) = (store.clone(), endusers.clone(), clock.now());
            async move {
                // Replay fingerprints and idempotency keys only matter until they expire.
                if let Err(error) = ReplayGuard::forget_expired(store.as_ref(), now).await {
                    tracing::warn!(error = %chain(&error), "forgetting expired request fingerprints failed");
                }
                if let Err(error) = IdempotencyStore::forget_expired(store.as_ref(), now).await {
                    tracing::warn!(error = %chain(&error), "forgetting expired idempotency keys failed");
                }
                if let Err(error) = endusers.forget_expired_challenges().await {
                    tracing::warn!(error = %chain(&error), "forgetting expired FIDO challenges failed");
                }
                0
            }
        },
    );
    let webhooks = context.webhooks.clone();
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
    vec![
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
fn spawn_loop<F, Fut>(
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
