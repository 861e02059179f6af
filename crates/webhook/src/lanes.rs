//! Fair delivery: how many attempts run at once, in all and per application, so one merchant
//! whose endpoint hangs cannot hold up everyone else's events (issue 12 §3).

use std::collections::HashMap;
use std::sync::Mutex;

use idconsent_kernel::id::ApplicationId;

use crate::model::Delivery;

/// Attempts in flight in this process: at most `total`, and at most `per_application` for any
/// one application. A slow application fills its own lane and waits there; the others' lanes
/// stay free.
#[derive(Debug)]
pub struct Lanes {
    total: usize,
    per_application: usize,
    in_flight: Mutex<HashMap<ApplicationId, usize>>,
}

/// Leased deliveries split by the lanes: the ones to attempt now, and the ones to hand back.
#[derive(Debug, Default)]
pub struct Admission {
    pub admitted: Vec<Delivery>,
    pub excess: Vec<Delivery>,
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

    /// How many more attempts may start now.
    pub fn free(&self) -> usize {
        let in_flight: usize = self.counts().values().sum();
        self.total.saturating_sub(in_flight)
    }

    /// Applications whose lane is full: not worth leasing for.
    pub fn full(&self) -> Vec<ApplicationId> {
        self.counts()
            .iter()
            .filter(|(_, count)| **count >= self.per_application)
            .map(|(application, _)| application.clone())
            .collect()
    }

    /// Takes a lane slot for each delivery that fits, oldest first; the rest are excess.
    pub fn admit(&self, leased: Vec<Delivery>) -> Admission {
        let mut counts = self.counts();
        let mut total: usize = counts.values().sum();
        let mut admission = Admission::default();
        for delivery in leased {
            let count = counts.entry(delivery.application_id.clone()).or_insert(0);
            if total < self.total && *count < self.per_application {
                *count += 1;
                total += 1;
                admission.admitted.push(delivery);
            } else {
                admission.excess.push(delivery);
            }
        }
        counts.retain(|_, count| *count > 0);
        admission
    }

    /// Frees the slot an attempt of `application` held.
    pub fn finish(&self, application: &ApplicationId) {
        let mut counts = self.counts();
        if let Some(count) = counts.get_mut(application) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(application);
            }
        }
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
            event_type: EventType::ConsentCreated,
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

    fn apps(deliveries: &[Delivery]) -> Vec<&str> {
        deliveries
            .iter()
            .map(|d| d.application_id.as_str())
            .collect()
    }

    #[test]
    fn one_application_cannot_take_more_than_its_lane() {
        let lanes = Lanes::new(8, 2);
        let leased = (0..5)
            .map(|n| delivery("app_slow", n))
            .chain([delivery("app_fast", 9)]);
        let admission = lanes.admit(leased.collect());
        assert_eq!(
            apps(&admission.admitted),
            ["app_slow", "app_slow", "app_fast"]
        );
        assert_eq!(admission.excess.len(), 3);
        assert_eq!(
            lanes.full(),
            [ApplicationId::from_trusted("app_slow".into())]
        );
        assert_eq!(lanes.free(), 5);
        // The slow lane frees one slot at a time; the fast one is never full.
        lanes.finish(&ApplicationId::from_trusted("app_slow".into()));
        assert!(lanes.full().is_empty());
        let again = lanes.admit(vec![delivery("app_slow", 6), delivery("app_slow", 7)]);
        assert_eq!((again.admitted.len(), again.excess.len()), (1, 1));
    }

    #[test]
    fn the_total_bounds_every_lane_together() {
        let lanes = Lanes::new(3, 2);
        let leased = ["app_a", "app_a", "app_b", "app_b", "app_c"];
        let admission = lanes.admit(
            leased
                .iter()
                .zip(0..)
                .map(|(a, n)| delivery(a, n))
                .collect(),
        );
        assert_eq!(apps(&admission.admitted), ["app_a", "app_a", "app_b"]);
        assert_eq!(lanes.free(), 0);
        for app in ["app_a", "app_a", "app_b", "app_unknown"] {
            lanes.finish(&ApplicationId::from_trusted(app.into()));
        }
        assert_eq!(lanes.free(), 3);
        assert!(lanes.full().is_empty());
    }
}
