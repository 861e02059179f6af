//! Calendar dates (`YYYY-MM-DD`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::Date;
use time::macros::format_description;

/// A calendar date without time zone, written `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CalendarDate(Date);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be a date in the form YYYY-MM-DD")]
pub struct InvalidDate;

impl CalendarDate {
    pub fn parse(text: &str) -> Result<Self, InvalidDate> {
        if text.len() != 10 {
            return Err(InvalidDate);
        }
        Date::parse(text, format_description!("[year]-[month]-[day]"))
            .map(Self)
            .map_err(|_| InvalidDate)
    }

    /// The UTC date of `now`.
    pub fn of(now: crate::Timestamp) -> Self {
        Self(now.to_offset_date_time().date())
    }

    pub fn year(self) -> i32 {
        self.0.year()
    }

    /// Whether this date is after the UTC date of `now`.
    pub fn is_after(self, now: crate::Timestamp) -> bool {
        self.0 > now.to_offset_date_time().date()
    }
}

impl fmt::Display for CalendarDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}",
            self.0.year(),
            u8::from(self.0.month()),
            self.0.day()
        )
    }
}

impl Serialize for CalendarDate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CalendarDate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_iso_dates() {
        let date = CalendarDate::parse("2019-03-04").unwrap();
        assert_eq!(date.to_string(), "2019-03-04");
        assert_eq!(date.year(), 2019);
    }

    #[test]
    fn rejects_impossible_or_loose_dates() {
        for bad in [
            "2019-02-30",
            "2019-3-4",
            "04/03/2019",
            "20190304",
            "",
            "2019-03-04T00:00",
        ] {
            assert!(CalendarDate::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn knows_future_dates() {
        let now = crate::Timestamp::parse_rfc3339("2026-11-21T10:00:00Z").unwrap();
        assert!(CalendarDate::parse("2026-11-22").unwrap().is_after(now));
        assert!(!CalendarDate::parse("2026-11-21").unwrap().is_after(now));
    }
}
