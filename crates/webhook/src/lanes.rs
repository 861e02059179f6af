//! Fair delivery: how many attempts run at once, in all and per application, so one merchant
//! whose endpoint hangs cannot hold up everyone else's events (issue 12 §3).

use std::collections::HashMap;
use std::sync::Mutex;

use idconsent_kernel::id::ApplicationId;

use crate::model::Delivery;

/// Attempts in flight in this process. A round leases at most `per_application` deliveries and
/// skips applications that already have `per_application` in flight, so one application never
/// has more than `2 × per_application − 1` attempts in flight and the others keep the rest of
/// the `total`. A leased delivery is attempted at once, unless its application's signing secrets
/// cannot be read: then the round hands it back unattempted and frees its slot at once.
#[derive(Debug)]
pub struct Lanes {
    total: usize,
    per_application: usize,
    in_flight: Mutex<HashMap<ApplicationId, usize>>,
}

impl Lanes {
    pub fn new(total: usize, per_application: usize) -> Self {
        Self {
            total: total.max(1),
            per_application: per_application.max(1),
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, HashMap<ApplicationId, usize>> {
        // A panic while holding the lock cannot leave the counts half-updated (each change is
        // one insert or remove), so a poisoned lock is still usable.
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many deliveries the next round may lease: what is free in all, at most one
    /// application's lane.
    pub fn round_limit(&self) -> usize {
        let in_flight: usize = self.counts().values().sum();
        self.total
            .saturating_sub(in_flight)
            .min(self.per_application)
    }

    /// Applications whose lane is full: the next round skips them.
    pub fn full(&self) -> Vec<ApplicationId> {
        self.counts()
            .iter()
            .filter(|(_, count)| **count >= self.per_application)
            .map(|(application, _)| application.clone())
            .collect()
    }

    /// Counts the leased deliveries as in flight.
    pub fn take(&self, leased: &[Delivery]) {
        let mut counts = self.counts();
        for delivery in leased {
            *counts.entry(delivery.application_id.clone()).or_insert(0) += 1;
        }
    }

    /// How many deliveries a round leases at most.
    pub fn per_application(&self) -> usize {
        self.per_application
    }

    /// Frees the slot an attempt of `application` held; `true` when that makes room a round
    /// would otherwise not have had: the application's lane drops below full, or everything was
    /// full. An application may have up to `2 × per_application − 1` in flight; freeing one of
    /// those above the lane size makes no room (the next round would still skip it, after
    /// scanning its backlog for nothing), so it is not news.
    pub fn finish(&self, application: &ApplicationId) -> bool {
        let mut counts = self.counts();
        let total: usize = counts.values().sum();
        let Some(count) = counts.get_mut(application) else {
            return false;
        };
        let was_full = *count == self.per_application || total >= self.total;
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(application);
        }
        was_full
    }
}

#[cfg(test)]
mod tests {
    use idconsent_kernel::id::{DeliveryId, EventId, TypedId};
    use idconsent_kernel::{Environment, Timestamp};

    use super::*;
    use crate::model::{DeliveryStatus, EventType};

    fn delivery(application: &str, n: u32) -> Delivery {
        Delivery {
            id: DeliveryId::from_trusted(format!("whd_{application}_{n}")),
            event_id: EventId::from_trusted(format!("evt_{n}")),
            event_type: EventType::declared("consent.created"),
            application_id: ApplicationId::from_trusted(application.to_owned()),
            environment: Environment::Sandbox,
            url: "https://shop.example/hooks".into(),
            body: Vec::new(),
            status: DeliveryStatus::Pending,
            next_attempt_at: None,
            attempts: Vec::new(),
            created_at: Timestamp::from_millis(i64::from(n)),
        }
    }

    #[test]
    fn a_full_application_is_skipped_and_a_round_takes_at_most_one_lane() {
        let lanes = Lanes::new(8, 3);
        assert_eq!(lanes.round_limit(), 3);
        let leased: Vec<Delivery> = (0..3).map(|n| delivery("app_slow", n)).collect();
        lanes.take(&leased);
        assert_eq!(
            lanes.full(),
            [ApplicationId::from_trusted("app_slow".into())]
        );
        assert_eq!(lanes.round_limit(), 3, "the others still have room");
        lanes.take(&[delivery("app_fast", 9)]);
        assert_eq!(lanes.round_limit(), 3);
        // The slow lane frees one slot at a time.
        assert!(lanes.finish(&ApplicationId::from_trusted("app_slow".into())));
        assert!(lanes.full().is_empty());
    }

    #[test]
    fn only_a_finish_that_unfills_a_lane_is_news() {
        let lanes = Lanes::new(100, 3);
        let slow = ApplicationId::from_trusted("app_slow".into());
        // Two rounds: 3, then 2 more while the first ran (at most 2 × 3 − 1 in flight).
        lanes.take(&(0..5).map(|n| delivery("app_slow", n)).collect::<Vec<_>>());
        let news: Vec<bool> = (0..5).map(|_| lanes.finish(&slow)).collect();
        // 5 → 4 and 4 → 3 leave the lane full; 3 → 2 opens it; below that it is open already.
        assert_eq!(news, [false, false, true, false, false]);
    }

    #[test]
    fn the_total_bounds_every_lane_together() {
        let lanes = Lanes::new(4, 3);
        let leased = ["app_a", "app_a", "app_b"];
        lanes.take(
            &leased
                .iter()
                .zip(0..)
                .map(|(a, n)| delivery(a, n))
                .collect::<Vec<_>>(),
        );
        assert_eq!(lanes.round_limit(), 1);
        lanes.take(&[delivery("app_c", 7)]);
        assert_eq!(lanes.round_limit(), 0);
        for app in ["app_a", "app_a", "app_b", "app_c", "app_unknown"] {
            lanes.finish(&ApplicationId::from_trusted(app.into()));
        }
        assert_eq!(lanes.round_limit(), 3);
        assert!(lanes.full().is_empty());
    }
}
