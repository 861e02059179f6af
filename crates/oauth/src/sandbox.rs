//! Sandbox test identities: what an OAuth request shares when the merchant itself decides it
//! through the sandbox helper (`POST /v1/sandbox/consents/:id/approve`).
//!
//! No person approved, so no person's data may leave: the claims come from these fixed test
//! phones only (like a payment provider's test cards), and any other phone has no verified
//! claim — whether or not a real user is enrolled with it, so the answer says nothing about
//! who is enrolled. When the real user approves a sandbox request with their passkey they have
//! consented, and their own claims are shared as in live.

use idconsent_kernel::{PhoneNumber, Timestamp};
use serde_json::{Value, json};

use crate::model::{ClaimKey, VerifiedValue};

/// The `verificationSource` of every sandbox claim.
pub const SANDBOX_SOURCE: &str = "sandbox";

/// When every sandbox claim reads as verified: 2026-01-01T00:00:00Z.
pub const SANDBOX_VERIFIED_AT: Timestamp = Timestamp::from_millis(1_767_225_600_000);

/// One documented test identity.
#[derive(Debug, Clone, Copy)]
pub struct SandboxIdentity {
    pub phone: &'static str,
    /// What the identity has verified values for, in `ClaimKey` terms.
    pub claims: &'static [(ClaimKey, SandboxValue)],
}

/// A claim value as written in the table (JSON built on use).
#[derive(Debug, Clone, Copy)]
pub enum SandboxValue {
    Text(&'static str),
    /// An OpenID Connect address object: `formatted` and `country`.
    Address {
        formatted: &'static str,
        country: &'static str,
    },
}

impl SandboxValue {
    fn to_json(self) -> Value {
        match self {
            SandboxValue::Text(text) => Value::from(text),
            SandboxValue::Address { formatted, country } => {
                json!({ "formatted": formatted, "country": country })
            }
        }
    }
}

/// The test identities, documented in the README ("Sandbox identities").
pub const SANDBOX_IDENTITIES: [SandboxIdentity; 3] = [
    SandboxIdentity {
        phone: "+15555550100",
        claims: &[
            (ClaimKey::PhoneNumber, SandboxValue::Text("+15555550100")),
            (ClaimKey::GivenName, SandboxValue::Text("Jane")),
            (ClaimKey::FamilyName, SandboxValue::Text("Sandbox")),
            (ClaimKey::Name, SandboxValue::Text("Jane Sandbox")),
            (ClaimKey::Birthdate, SandboxValue::Text("1990-01-01")),
            (
                ClaimKey::Email,
                SandboxValue::Text("jane.sandbox@example.com"),
            ),
            (ClaimKey::Nationality, SandboxValue::Text("US")),
            (ClaimKey::DocumentNumber, SandboxValue::Text("SBX000001")),
            (
                ClaimKey::Address,
                SandboxValue::Address {
                    formatted: "1 Sandbox Way, Testville, CA 94000",
                    country: "US",
                },
            ),
        ],
    },
    SandboxIdentity {
        phone: "+15555550101",
        claims: &[(ClaimKey::PhoneNumber, SandboxValue::Text("+15555550101"))],
    },
    SandboxIdentity {
        phone: "+15555550102",
        claims: &[
            (ClaimKey::PhoneNumber, SandboxValue::Text("+15555550102")),
            (ClaimKey::GivenName, SandboxValue::Text("Max")),
            (ClaimKey::FamilyName, SandboxValue::Text("Mustermann")),
            (ClaimKey::Name, SandboxValue::Text("Max Mustermann")),
            (ClaimKey::Birthdate, SandboxValue::Text("1964-08-12")),
            (ClaimKey::Nationality, SandboxValue::Text("DE")),
        ],
    },
];

/// The verified claims a sandbox helper's decision shares for `phone`: the test identity's, or
/// none for any other phone.
pub fn claims_of(phone: &PhoneNumber) -> Vec<(ClaimKey, VerifiedValue)> {
    SANDBOX_IDENTITIES
        .iter()
        .find(|identity| identity.phone == phone.as_str())
        .map(|identity| {
            identity
                .claims
                .iter()
                .map(|(key, value)| {
                    (
                        *key,
                        VerifiedValue {
                            value: value.to_json(),
                            source: SANDBOX_SOURCE,
                            verified_at: SANDBOX_VERIFIED_AT,
                        },
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phone(text: &str) -> PhoneNumber {
        PhoneNumber::parse(text).unwrap()
    }

    #[test]
    fn test_phones_are_valid_and_carry_their_own_number() {
        for identity in SANDBOX_IDENTITIES {
            assert_eq!(phone(identity.phone).as_str(), identity.phone);
            let claims = claims_of(&phone(identity.phone));
            assert_eq!(claims[0].0, ClaimKey::PhoneNumber);
            assert_eq!(claims[0].1.value, Value::from(identity.phone));
            assert!(claims.iter().all(|(_, value)| value.source == "sandbox"));
        }
    }

    #[test]
    fn any_other_phone_has_no_verified_claim() {
        assert!(claims_of(&phone("+14155550123")).is_empty());
    }
}
