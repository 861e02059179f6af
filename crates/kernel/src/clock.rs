//! Time as a port: domain code asks a [`Clock`], tests drive a [`ManualClock`].

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// An instant in UTC with millisecond precision.
///
/// Stored as milliseconds since the Unix epoch (the database keeps the same integer), shown as
/// RFC 3339 with exactly three fractional digits: `2026-11-21T10:00:00.000Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Whole seconds since the epoch (Standard Webhooks and JWT `exp` use seconds).
    pub const fn as_secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    pub fn plus(self, duration: Duration) -> Self {
        Self(self.0.saturating_add(duration_millis(duration)))
    }

    pub fn minus(self, duration: Duration) -> Self {
        Self(self.0.saturating_sub(duration_millis(duration)))
    }

    /// The non-negative time from `earlier` to `self` (zero when `earlier` is later).
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0.saturating_sub(earlier.0)).unwrap_or(0))
    }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-21T10:00:00.000Z`.
    pub fn to_rfc3339(self) -> String {
        let datetime = self.to_offset_date_time();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            datetime.year(),
            u8::from(datetime.month()),
            datetime.day(),
            datetime.hour(),
            datetime.minute(),
            datetime.second(),
            datetime.millisecond()
        )
    }

    /// Parses any RFC 3339 timestamp; sub-millisecond digits are truncated.
    pub fn parse_rfc3339(text: &str) -> Result<Self, InvalidTimestamp> {
        let parsed = OffsetDateTime::parse(text, &Rfc3339).map_err(|_| InvalidTimestamp)?;
        let millis = parsed.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(millis)
            .map(Self)
            .map_err(|_| InvalidTimestamp)
    }

    /// The `YYYY-MM` calendar month this instant falls in (UTC), as billing periods use.
    pub fn year_month(self) -> (i32, u8) {
        let datetime = self.to_offset_date_time();
        (datetime.year(), u8::from(datetime.month()))
    }

    pub(crate) fn to_offset_date_time(self) -> OffsetDateTime {
        let nanos = i128::from(self.0) * 1_000_000;
        OffsetDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(if self.0 < 0 {
            time::PrimitiveDateTime::MIN.assume_utc()
        } else {
            time::PrimitiveDateTime::MAX.assume_utc()
        })
    }
}

fn duration_millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be an RFC 3339 timestamp")]
pub struct InvalidTimestamp;

/// The source of "now". Implementations must be cheap and callable from any thread.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> Timestamp;
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    // The one sanctioned read of the system time; everything else asks a `Clock`.
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> Timestamp {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(duration_millis(since_epoch))
    }
}

/// The system clock moved by an offset that tests can advance: time keeps flowing (so ids stay
/// time-ordered and polling works), and a test jumps a week ahead with one call instead of
/// waiting.
#[derive(Debug, Default)]
pub struct ShiftedClock {
    offset_millis: AtomicI64,
}

impl ShiftedClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves this clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.offset_millis
            .fetch_add(duration_millis(by), Ordering::SeqCst);
    }

    /// How far ahead of the system clock this clock is.
    pub fn offset(&self) -> Duration {
        Duration::from_millis(u64::try_from(self.offset_millis.load(Ordering::SeqCst)).unwrap_or(0))
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> Timestamp {
        SystemClock.now().plus(Duration::from_millis(
            u64::try_from(self.offset_millis.load(Ordering::SeqCst)).unwrap_or(0),
        ))
    }
}

/// A clock that only moves when told to: expiry, TTLs and retry schedules are tested with it
/// instead of sleeps.
#[derive(Debug, Default)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self {
            millis: AtomicI64::new(start.as_millis()),
        }
    }

    pub fn advance(&self, by: Duration) {
        self.millis.fetch_add(duration_millis(by), Ordering::SeqCst);
    }

    pub fn set(&self, to: Timestamp) {
        self.millis.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn formats_with_milliseconds_and_z() {
        assert_eq!(
            Timestamp::from_millis(1_763_719_200_000).to_rfc3339(),
            "2025-11-21T10:00:00.000Z"
        );
        assert_eq!(
            Timestamp::from_millis(7).to_rfc3339(),
            "1970-01-01T00:00:00.007Z"
        );
    }

    #[test]
    fn parses_offsets_into_utc() {
        let parsed = Timestamp::parse_rfc3339("2025-11-21T12:00:00.250+02:00").unwrap();
        assert_eq!(parsed, Timestamp::from_millis(1_763_719_200_250));
        assert!(Timestamp::parse_rfc3339("yesterday").is_err());
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_millis(1_000));
        assert_eq!(clock.now().as_millis(), 1_000);
        clock.advance(Duration::from_secs(2));
        assert_eq!(clock.now().as_millis(), 3_000);
    }

    #[test]
    fn since_is_never_negative() {
        let early = Timestamp::from_millis(10);
        let late = Timestamp::from_millis(30);
        assert_eq!(late.since(early), Duration::from_millis(20));
        assert_eq!(early.since(late), Duration::ZERO);
    }

    proptest! {
        #[test]
        fn rfc3339_round_trips(millis in 0i64..4_102_444_800_000) {
            let ts = Timestamp::from_millis(millis);
            prop_assert_eq!(Timestamp::parse_rfc3339(&ts.to_rfc3339()).unwrap(), ts);
        }
    }
}
