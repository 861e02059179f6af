//! Counting events in fixed time windows, shared by every server process: the port behind
//! abuse limits such as "30 SMS-sending calls an hour per client".

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Timestamp;

#[derive(Debug, thiserror::Error)]
#[error("throttle storage failed")]
pub struct ThrottleError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// The fixed window `at` falls in.
pub fn window_start(at: Timestamp, window: Duration) -> Timestamp {
    let width = i64::try_from(window.as_millis()).unwrap_or(i64::MAX).max(1);
    Timestamp::from_millis(at.as_millis().div_euclid(width) * width)
}

/// Counters of events per key and window.
///
/// Contract: `take` counts one event for `key` in the window starting at `window_start` when
/// fewer than `limit` are counted there, and says whether it did — one conditional write, so of
/// concurrent takers (in any process) no more than `limit` succeed per window. `forget_before`
/// deletes the counters of windows that started before `before`.
#[async_trait]
pub trait Throttle: Send + Sync + fmt::Debug {
    async fn take(
        &self,
        key: &str,
        window_start: Timestamp,
        limit: u64,
    ) -> Result<bool, ThrottleError>;
    async fn forget_before(&self, before: Timestamp) -> Result<u64, ThrottleError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_aligned() {
        let hour = Duration::from_secs(3600);
        let at = Timestamp::parse_rfc3339("2026-11-24T10:59:59.999Z").unwrap();
        assert_eq!(
            window_start(at, hour).to_rfc3339(),
            "2026-11-24T10:00:00.000Z"
        );
        let next = Timestamp::parse_rfc3339("2026-11-24T11:00:00.000Z").unwrap();
        assert_eq!(window_start(next, hour), next);
    }
}

/// The [`Throttle`] contract, for every adapter: `throttle_contract!(make)`, `make` being an
/// `async fn() -> Option<(Arc<dyn Throttle>, G)>` giving a fresh store.
#[cfg(feature = "contract")]
pub mod contract {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use super::Throttle;
    use crate::clock::Timestamp;

    #[macro_export]
    macro_rules! throttle_contract {
        ($make:path) => {
            $crate::throttle_contract!(@cases $make;
                a_window_counts_up_to_its_limit,
                concurrent_takers_never_pass_the_limit,
                old_windows_are_forgotten,
            );
        };
        (@cases $make:path; $($case:ident),* $(,)?) => {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let Some((throttle, _guard)) = $make().await else { return };
                    $crate::throttle::contract::$case(throttle).await;
                }
            )*
        };
    }

    fn key(prefix: &str) -> String {
        let random: Arc<dyn crate::RandomSource> = Arc::new(crate::OsRandom);
        format!("{prefix}:{}", random.hex(8))
    }

    const WINDOW: Timestamp = Timestamp::from_millis(1_763_719_200_000);

    pub async fn a_window_counts_up_to_its_limit(throttle: Arc<dyn Throttle>) {
        let key = key("a");
        for _ in 0..3 {
            assert!(throttle.take(&key, WINDOW, 3).await.unwrap());
        }
        assert!(!throttle.take(&key, WINDOW, 3).await.unwrap());
        // A higher limit admits more; another window and another key start afresh.
        assert!(throttle.take(&key, WINDOW, 4).await.unwrap());
        let next = Timestamp::from_millis(WINDOW.as_millis() + 60_000);
        assert!(throttle.take(&key, next, 3).await.unwrap());
        assert!(throttle.take(&self::key("b"), WINDOW, 1).await.unwrap());
        assert!(!throttle.take(&self::key("c"), WINDOW, 0).await.unwrap());
    }

    pub async fn concurrent_takers_never_pass_the_limit(throttle: Arc<dyn Throttle>) {
        let key = key("burst");
        let taken = futures_util::future::join_all((0..20).map(|_| {
            let (throttle, key) = (throttle.clone(), key.clone());
            async move { throttle.take(&key, WINDOW, 5).await.unwrap() }
        }))
        .await;
        assert_eq!(taken.iter().filter(|t| **t).count(), 5, "{taken:?}");
    }

    pub async fn old_windows_are_forgotten(throttle: Arc<dyn Throttle>) {
        let key = key("old");
        assert!(throttle.take(&key, WINDOW, 1).await.unwrap());
        let later = Timestamp::from_millis(WINDOW.as_millis() + 3_600_000);
        assert!(throttle.forget_before(later).await.unwrap() >= 1);
        // Forgotten: the old window counts from zero again.
        assert!(throttle.take(&key, WINDOW, 1).await.unwrap());
    }
}
