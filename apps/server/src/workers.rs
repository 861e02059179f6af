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
    let clock = context.clock.clone();
    let maintenance = spawn_loop(
        "maintenance",
        Duration::from_secs(60),
        Arc::new(Notify::new()),
        shutdown.clone(),
        move || {
            let (store, now) = (store.clone(), clock.now());
            async move {
                // Replay fingerprints and idempotency keys only matter until they expire.
                if let Err(error) = ReplayGuard::forget_expired(store.as_ref(), now).await {
                    tracing::warn!(error = %error, "forgetting expired request fingerprints failed");
                }
                if let Err(error) = IdempotencyStore::forget_expired(store.as_ref(), now).await {
                    tracing::warn!(error = %error, "forgetting expired idempotency keys failed");
                }
                0
            }
        },
    );
    vec![
        maintenance,
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
                            tracing::warn!(error = %error, "notification dispatch failed");
                            0
                        }
                    }
                }
            },
        ),
    ]
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
                _ = shutdown.changed() => {}
            }
        }
        tracing::debug!(worker = name, "worker stopped");
    })
}
