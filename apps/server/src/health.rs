//! Whether the database answers, as the background workers and `/readyz` see it: the
//! `database_up` gauge, and one log line when it goes away and one when it is back — not a
//! warning per worker round (issue 19).
//!
//! Each reporter (a worker, `/readyz`) has its own verdict and the database counts as down
//! while any of them last saw it unreachable: on a locked or full SQLite file reads still work
//! and writes fail, and a reading worker's success must not hide a writing worker's failure.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::http::metrics::Metrics;

#[derive(Debug)]
pub struct DatabaseHealth {
    /// Reporters whose last attempt found the database unreachable.
    failing: Mutex<BTreeSet<&'static str>>,
    metrics: Arc<Metrics>,
}

impl DatabaseHealth {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            failing: Mutex::new(BTreeSet::new()),
            metrics,
        }
    }

    fn failing(&self) -> MutexGuard<'_, BTreeSet<&'static str>> {
        // Each change is one insert or remove: a poisoned set is still consistent.
        self.failing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `reporter` reached the database.
    pub fn answered(&self, reporter: &'static str) {
        let mut failing = self.failing();
        if failing.remove(reporter) && failing.is_empty() {
            tracing::info!("the database is reachable again");
            self.metrics.set_database_up(true);
        }
    }

    /// `reporter` could not reach the database (`reason`: what the adapter saw).
    pub fn unreachable(&self, reporter: &'static str, reason: &str) {
        let mut failing = self.failing();
        let was_up = failing.is_empty();
        failing.insert(reporter);
        if was_up {
            tracing::error!(
                reporter,
                reason,
                "the database is unreachable; answering 503 until it returns"
            );
            self.metrics.set_database_up(false);
        }
    }

    pub fn is_down(&self) -> bool {
        !self.failing().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_while_any_reporter_fails() {
        let health = DatabaseHealth::new(Arc::new(Metrics::new()));
        assert!(!health.is_down());
        health.unreachable("webhooks", "database is locked");
        health.answered("consent-expiry");
        assert!(
            health.is_down(),
            "a reader's success does not hide a writer's failure"
        );
        health.unreachable("notifications", "database is locked");
        health.answered("webhooks");
        assert!(health.is_down());
        health.answered("notifications");
        assert!(!health.is_down());
    }
}
