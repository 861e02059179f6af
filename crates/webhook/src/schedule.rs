use std::time::Duration;

use idconsent_kernel::Timestamp;

/// The waits between delivery attempts: N entries give N + 1 attempts before `failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrySchedule {
    waits: Vec<Duration>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid retry schedule entry {0:?}: use durations like 500ms, 5s, 5m, 2h")]
pub struct InvalidSchedule(pub String);

impl RetrySchedule {
    pub fn new(waits: Vec<Duration>) -> Self {
        Self { waits }
    }

    /// `500ms,5s,5m,2h` (IDC_WEBHOOK_RETRY_SCHEDULE). An empty text means no retries.
    pub fn parse(text: &str) -> Result<Self, InvalidSchedule> {
        let waits = text
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(parse_duration)
            .collect::<Result<_, _>>()?;
        Ok(Self { waits })
    }

    /// When to try again after `failed_attempts` failures, or `None` when they are used up.
    pub fn next_attempt(&self, now: Timestamp, failed_attempts: usize) -> Option<Timestamp> {
        failed_attempts
            .checked_sub(1)
            .and_then(|index| self.waits.get(index))
            .map(|wait| now.plus(*wait))
    }

    pub fn attempts(&self) -> usize {
        self.waits.len() + 1
    }
}

impl Default for RetrySchedule {
    /// About 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (CONTRACT §8).
    fn default() -> Self {
        Self {
            waits: [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
        }
    }
}

fn parse_duration(entry: &str) -> Result<Duration, InvalidSchedule> {
    let invalid = || InvalidSchedule(entry.to_owned());
    let split = entry
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(invalid)?;
    let (number, unit) = entry.split_at(split);
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let millis = match unit {
        "ms" => number,
        "s" => number.checked_mul(1_000).ok_or_else(invalid)?,
        "m" => number.checked_mul(60_000).ok_or_else(invalid)?,
        "h" => number.checked_mul(3_600_000).ok_or_else(invalid)?,
        _ => return Err(invalid()),
    };
    Ok(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_contract_schedule() {
        let schedule = RetrySchedule::default();
        assert_eq!(schedule.attempts(), 8);
        let now = Timestamp::from_millis(0);
        assert_eq!(
            schedule.next_attempt(now, 1),
            Some(Timestamp::from_millis(5_000))
        );
        assert_eq!(
            schedule.next_attempt(now, 7),
            Some(Timestamp::from_millis(36_000_000))
        );
        assert_eq!(schedule.next_attempt(now, 8), None);
    }

    #[test]
    fn parses_the_environment_form() {
        let schedule = RetrySchedule::parse("500ms, 5s,5m,2h").unwrap();
        assert_eq!(schedule.attempts(), 5);
        let now = Timestamp::from_millis(0);
        assert_eq!(
            schedule.next_attempt(now, 1),
            Some(Timestamp::from_millis(500))
        );
        assert_eq!(
            schedule.next_attempt(now, 4),
            Some(Timestamp::from_millis(7_200_000))
        );
        assert_eq!(RetrySchedule::parse("").unwrap().attempts(), 1);
        for bad in ["5", "5x", "ms", "-5s", "1.5s"] {
            assert!(RetrySchedule::parse(bad).is_err(), "{bad}");
        }
    }
}
