//! Send limits (CONTRACT §9) on the in-memory throttle, which first passes the throttle
//! contract every adapter runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::{ManualClock, Throttle, Timestamp};
use idconsent_notification::testing::InMemoryThrottle;
use idconsent_notification::{SendLimitError, SendLimitSettings, SendLimits, Sender};

mod contract {
    use super::*;

    async fn throttle() -> Option<(Arc<dyn Throttle>, ())> {
        Some((Arc::new(InMemoryThrottle::default()), ()))
    }

    idconsent_kernel::throttle_contract!(throttle);
}

fn limits(per_client: u64, global: u64) -> (SendLimits, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(
        Timestamp::parse_rfc3339("2026-11-24T10:30:00.000Z").unwrap(),
    ));
    let limits = SendLimits::new(
        Arc::new(InMemoryThrottle::default()),
        clock.clone(),
        SendLimitSettings { per_client, global },
    );
    (limits, clock)
}

fn retry_after(outcome: Result<(), SendLimitError>) -> u64 {
    match outcome {
        Err(SendLimitError::Limited {
            retry_after_secs, ..
        }) => retry_after_secs,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn each_client_gets_its_hourly_allowance() {
    let (limits, clock) = limits(3, 1_000);
    let ip = Sender::Ip("203.0.113.7".into());
    for _ in 0..3 {
        limits.admit(std::slice::from_ref(&ip)).await.unwrap();
    }
    // Refused until the hour turns (10:30 → 11:00).
    assert_eq!(
        retry_after(limits.admit(std::slice::from_ref(&ip)).await),
        1800
    );
    // Another address, and an application, count on their own.
    limits
        .admit(&[Sender::Ip("203.0.113.8".into())])
        .await
        .unwrap();
    let app = Sender::Application("app_1".into());
    limits.admit(std::slice::from_ref(&app)).await.unwrap();
    // A signed call counts for both its address and its application.
    let both = [ip.clone(), app];
    retry_after(limits.admit(&both).await);
    clock.advance(Duration::from_secs(1800));
    limits.admit(&both).await.unwrap();
}

#[tokio::test]
async fn everyone_together_gets_the_global_allowance_per_minute() {
    let (limits, clock) = limits(100, 5);
    for n in 0..5 {
        limits
            .admit(&[Sender::Ip(format!("198.51.100.{n}"))])
            .await
            .unwrap();
    }
    assert_eq!(
        retry_after(limits.admit(&[Sender::Ip("198.51.100.99".into())]).await),
        60
    );
    clock.advance(Duration::from_secs(60));
    limits
        .admit(&[Sender::Ip("198.51.100.99".into())])
        .await
        .unwrap();
}
