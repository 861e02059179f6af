//! Typed, prefixed identifiers (`cs_01JD…`) and the [`IdGenerator`] port.
//!
//! Every id is a type prefix plus a Crockford base32 body. Most bodies are ULIDs (26 characters:
//! 48 bits of time, 80 random bits), so ids sort by creation time. Ids that act as capabilities
//! — consent sessions, QR codes, signature requests, which appear in QR codes and public URLs —
//! are [`Entropy::Unguessable`]: the ULID time part followed by 128 random bits (36 characters).

use std::fmt;
use std::sync::Arc;

use crate::clock::Clock;
use crate::random::RandomSource;

/// How much randomness an id body carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entropy {
    /// A ULID: time-ordered, 80 random bits.
    Sortable,
    /// ULID time part plus 128 random bits, for ids that grant access by being known.
    Unguessable,
}

/// An identifier type with a fixed prefix.
pub trait TypedId: Sized + Clone + fmt::Display {
    const PREFIX: &'static str;
    const ENTROPY: Entropy;

    /// Wraps a stored value without checking it (storage adapters only).
    fn from_trusted(raw: String) -> Self;

    fn as_str(&self) -> &str;

    /// Checks the prefix and the body's shape. Anything else is not an id of this type, which
    /// callers usually report as "not found".
    fn parse(text: &str) -> Result<Self, InvalidId> {
        let body = text.strip_prefix(Self::PREFIX).ok_or(InvalidId)?;
        let well_formed =
            !body.is_empty() && body.len() <= 64 && body.bytes().all(|b| b.is_ascii_alphanumeric());
        if well_formed {
            Ok(Self::from_trusted(text.to_owned()))
        } else {
            Err(InvalidId)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed identifier")]
pub struct InvalidId;

/// Mints id bodies. The system implementation is [`UlidGenerator`].
pub trait IdGenerator: Send + Sync + fmt::Debug {
    /// A fresh id body (without prefix) of the given entropy.
    fn body(&self, entropy: Entropy) -> String;
}

impl dyn IdGenerator + '_ {
    /// A fresh id of type `T`: `ids.next::<SessionId>()`.
    pub fn next<T: TypedId>(&self) -> T {
        let body = self.body(T::ENTROPY);
        let mut raw = String::with_capacity(T::PREFIX.len() + body.len());
        raw.push_str(T::PREFIX);
        raw.push_str(&body);
        T::from_trusted(raw)
    }
}

/// ULID bodies from a [`Clock`] and a [`RandomSource`].
#[derive(Debug, Clone)]
pub struct UlidGenerator {
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
}

impl UlidGenerator {
    pub fn new(clock: Arc<dyn Clock>, random: Arc<dyn RandomSource>) -> Self {
        Self { clock, random }
    }
}

impl IdGenerator for UlidGenerator {
    fn body(&self, entropy: Entropy) -> String {
        let millis = u64::try_from(self.clock.now().as_millis()).unwrap_or(0);
        let random = self.random.u128();
        match entropy {
            Entropy::Sortable => {
                ulid::Ulid::from_parts(millis, random & ((1u128 << 80) - 1)).to_string()
            }
            Entropy::Unguessable => {
                let time_part = ulid::Ulid::from_parts(millis, 0).to_string();
                let mut body = String::with_capacity(36);
                body.push_str(&time_part[..10]);
                body.push_str(&ulid::Ulid(random).to_string());
                body
            }
        }
    }
}

/// Declares a typed id: `typed_id!(SessionId, "cs_", Unguessable, "A consent session.");`
#[macro_export]
macro_rules! typed_id {
    ($name:ident, $prefix:literal, $entropy:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $crate::id::TypedId for $name {
            const PREFIX: &'static str = $prefix;
            const ENTROPY: $crate::id::Entropy = $crate::id::Entropy::$entropy;

            fn from_trusted(raw: String) -> Self {
                Self(raw)
            }

            fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <String as ::serde::Deserialize>::deserialize(d)?;
                <Self as $crate::id::TypedId>::parse(&text).map_err(::serde::de::Error::custom)
            }
        }
    };
}

// The one table of prefixes (CONTRACT §1), so no two kinds can collide.
typed_id!(MerchantId, "mer_", Sortable, "A merchant account.");
typed_id!(
    MerchantUserId,
    "usr_",
    Sortable,
    "A member of a merchant's team."
);
typed_id!(ApplicationId, "app_", Sortable, "A merchant application.");
typed_id!(
    ClientId,
    "cli_",
    Sortable,
    "An application's public client ID."
);
typed_id!(
    SessionId,
    "cs_",
    Unguessable,
    "A consent session (also an OAuth request)."
);
typed_id!(EnrollmentId, "enr_", Sortable, "An end-user enrollment.");
typed_id!(
    EndUserId,
    "eu_",
    Sortable,
    "An end user (one per phone number); not in CONTRACT §1, it appears only inside app tokens."
);
typed_id!(
    RefreshFamilyId,
    "rtf_",
    Sortable,
    "A family of rotated refresh tokens (internal)."
);
typed_id!(DeviceId, "dev_", Sortable, "A registered end-user device.");
typed_id!(ChallengeId, "chl_", Unguessable, "A FIDO challenge.");
typed_id!(QrCodeId, "qr_", Unguessable, "A generated QR code.");
typed_id!(MandateId, "md_", Sortable, "A digital mandate.");
typed_id!(
    SignatureRequestId,
    "sr_",
    Unguessable,
    "A signature request."
);
typed_id!(
    VerificationId,
    "idv_",
    Sortable,
    "An identity verification."
);
typed_id!(InvoiceId, "in_", Sortable, "An invoice.");
typed_id!(EventId, "evt_", Sortable, "A webhook event.");
typed_id!(
    DeliveryId,
    "whd_",
    Sortable,
    "A webhook delivery (one event to one URL)."
);
typed_id!(
    DocumentId,
    "doc_",
    Sortable,
    "A merchant's uploaded document."
);
typed_id!(MessageId, "msg_", Sortable, "An outgoing SMS or email.");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, Timestamp};
    use crate::random::SeededRandom;

    fn generator() -> Arc<dyn IdGenerator> {
        Arc::new(UlidGenerator::new(
            Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000))),
            Arc::new(SeededRandom::new(42)),
        ))
    }

    #[test]
    fn ids_carry_their_prefix_and_body_length() {
        let ids = generator();
        let merchant: MerchantId = ids.next();
        assert!(merchant.as_str().starts_with("mer_"));
        assert_eq!(merchant.as_str().len(), 4 + 26);
        let session: SessionId = ids.next();
        assert!(session.as_str().starts_with("cs_"));
        assert_eq!(session.as_str().len(), 3 + 36);
    }

    #[test]
    fn sortable_ids_follow_the_clock() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000)));
        let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(
            clock.clone(),
            Arc::new(SeededRandom::new(1)),
        ));
        let first: EventId = ids.next();
        clock.advance(std::time::Duration::from_millis(1));
        let second: EventId = ids.next();
        assert!(first < second);
    }

    #[test]
    fn parse_checks_prefix_and_characters() {
        assert!(SessionId::parse("cs_01JDKXA1B2C3D4E5F6G7H8J9K0").is_ok());
        assert_eq!(
            SessionId::parse("mer_01JDKXA1B2C3D4E5F6G7H8J9K0"),
            Err(InvalidId)
        );
        assert_eq!(SessionId::parse("cs_"), Err(InvalidId));
        assert_eq!(SessionId::parse("cs_../etc/passwd"), Err(InvalidId));
        assert_eq!(
            SessionId::parse(&format!("cs_{}", "A".repeat(65))),
            Err(InvalidId)
        );
    }

    #[test]
    fn serde_round_trips_and_rejects_foreign_prefixes() {
        let id: DeviceId = generator().next();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(serde_json::from_str::<DeviceId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<DeviceId>("\"usr_01J\"").is_err());
    }
}
