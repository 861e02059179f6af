//! Email addresses.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A syntactically valid email address (RFC 5322 addr-spec as the `email_address` crate checks
/// it), at most 254 characters, with the domain lower-cased so that lookups by address match
/// however the user typed the domain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EmailAddress(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be an email address such as ops@example.com")]
pub struct InvalidEmailAddress;

impl EmailAddress {
    pub fn parse(text: &str) -> Result<Self, InvalidEmailAddress> {
        let trimmed = text.trim();
        if trimmed.len() > 254 || trimmed.contains(char::is_whitespace) {
            return Err(InvalidEmailAddress);
        }
        let parsed =
            email_address::EmailAddress::from_str(trimmed).map_err(|_| InvalidEmailAddress)?;
        let (local, domain) = (parsed.local_part(), parsed.domain());
        // Display names ("Ann <ann@x.y>") and domains without a dot are not addresses we can mail.
        if trimmed != parsed.email() || !domain.contains('.') || domain.starts_with('[') {
            return Err(InvalidEmailAddress);
        }
        Ok(Self(format!("{local}@{}", domain.to_ascii_lowercase())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EmailAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for EmailAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for EmailAddress {
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
    fn accepts_ordinary_addresses_and_lowercases_the_domain() {
        assert_eq!(
            EmailAddress::parse("Ops.Team+billing@Example.COM")
                .unwrap()
                .as_str(),
            "Ops.Team+billing@example.com"
        );
    }

    #[test]
    fn rejects_non_addresses() {
        for bad in [
            "",
            "ops",
            "ops@",
            "@example.com",
            "ops@localhost",
            "ops @example.com",
            "Ops <ops@example.com>",
            "ops@[127.0.0.1]",
        ] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad} should be refused");
        }
        assert!(EmailAddress::parse(&format!("{}@example.com", "a".repeat(250))).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC*") {
            let _ = EmailAddress::parse(&text);
        }
    }
}
