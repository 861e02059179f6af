//! Manual retries (`POST /v1/webhooks/deliveries/:id/retry`): at most 10 an hour per delivery,
//! so a script in a loop cannot turn one delivery into a flood at the merchant's own endpoint
//! or a load on the dispatcher.

use std::time::Duration;

use idconsent_kernel::Timestamp;

use crate::model::Delivery;

/// A delivery's manual retries in the current window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ManualRetries {
    pub count: u32,
    /// When the window of `count` began; `None` before the first manual retry.
    pub since: Option<Timestamp>,
}

/// How many manual retries a delivery gets per window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAllowance {
    pub per_window: u32,
    pub window: Duration,
}

impl Default for RetryAllowance {
    fn default() -> Self {
        Self {
            per_window: 10,
            window: Duration::from_secs(3600),
        }
    }
}

/// What a manual retry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManualRetry {
    /// Due now; the delivery as it is after the change.
    Retried(Delivery),
    /// The allowance is used up until `retry_at`; nothing changed.
    Refused {
        retry_at: Timestamp,
    },
    NotFound,
}

impl RetryAllowance {
    /// Counts one more retry at `now`: the new state, or when the next one is allowed. A window
    /// that has passed starts afresh.
    pub fn judge(
        &self,
        current: ManualRetries,
        now: Timestamp,
    ) -> Result<ManualRetries, Timestamp> {
        match current.since {
            Some(since) if now < since.plus(self.window) => {
                if current.count >= self.per_window {
                    Err(since.plus(self.window))
                } else {
                    Ok(ManualRetries {
                        count: current.count + 1,
                        since: Some(since),
                    })
                }
            }
            _ => Ok(ManualRetries {
                count: 1,
                since: Some(now),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_millis(secs * 1000)
    }

    #[test]
    fn ten_an_hour_then_refused_until_the_window_ends() {
        let allowance = RetryAllowance::default();
        let mut state = ManualRetries::default();
        for n in 1..=10 {
            state = allowance.judge(state, at(100 + n)).unwrap();
            assert_eq!(state.count, n as u32);
            assert_eq!(state.since, Some(at(101)));
        }
        assert_eq!(allowance.judge(state, at(200)), Err(at(3701)));
        assert_eq!(allowance.judge(state, at(3700)), Err(at(3701)));
        let fresh = allowance.judge(state, at(3701)).unwrap();
        assert_eq!((fresh.count, fresh.since), (1, Some(at(3701))));
    }
}
