//! E.164 phone numbers.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A phone number in E.164 form: `+`, a country code, 8 to 15 digits in all, no spaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhoneNumber(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be an E.164 phone number such as +15551234567")]
pub struct InvalidPhoneNumber;

impl PhoneNumber {
    pub fn parse(text: &str) -> Result<Self, InvalidPhoneNumber> {
        let digits = text.strip_prefix('+').ok_or(InvalidPhoneNumber)?;
        let valid = (8..=15).contains(&digits.len())
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0');
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidPhoneNumber)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last four digits, for places where a number must be recognisable but not exposed.
    pub fn masked(&self) -> String {
        let tail = &self.0[self.0.len().saturating_sub(4)..];
        format!("•••{tail}")
    }
}

impl fmt::Display for PhoneNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for PhoneNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PhoneNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_e164() {
        assert!(PhoneNumber::parse("+15551234567").is_ok());
        assert!(PhoneNumber::parse("+4915112345678").is_ok());
    }

    #[test]
    fn rejects_other_forms() {
        for bad in [
            "15551234567",
            "+1 555 123 4567",
            "+1-555-123-4567",
            "+0155512345",
            "+1234567",
            "+1234567890123456",
            "",
            "+",
            "+１５５５１２３４５６７",
        ] {
            assert!(PhoneNumber::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn masks_all_but_the_last_four() {
        assert_eq!(
            PhoneNumber::parse("+15551234567").unwrap().masked(),
            "•••4567"
        );
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC*") {
            let _ = PhoneNumber::parse(&text);
        }

        #[test]
        fn valid_numbers_round_trip(digits in "[1-9][0-9]{7,14}") {
            let text = format!("+{digits}");
            let phone = PhoneNumber::parse(&text).unwrap();
            prop_assert_eq!(phone.as_str(), text.as_str());
        }
    }
}
