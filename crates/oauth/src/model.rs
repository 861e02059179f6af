//! Access requests, grants (authorization codes) and issued tokens.

use idconsent_consent::SessionStatus;
use idconsent_kernel::id::{ApplicationId, ClientId, SessionId};
use idconsent_kernel::{Environment, Sealed, SealedFor, Timestamp};
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::pkce::ChallengeMethod;

/// The claim keys of CONTRACT §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimKey {
    PhoneNumber,
    GivenName,
    FamilyName,
    Name,
    Birthdate,
    Email,
    Nationality,
    DocumentNumber,
    Address,
}

impl ClaimKey {
    pub const ALL: [ClaimKey; 9] = [
        ClaimKey::PhoneNumber,
        ClaimKey::GivenName,
        ClaimKey::FamilyName,
        ClaimKey::Name,
        ClaimKey::Birthdate,
        ClaimKey::Email,
        ClaimKey::Nationality,
        ClaimKey::DocumentNumber,
        ClaimKey::Address,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClaimKey::PhoneNumber => "phone_number",
            ClaimKey::GivenName => "given_name",
            ClaimKey::FamilyName => "family_name",
            ClaimKey::Name => "name",
            ClaimKey::Birthdate => "birthdate",
            ClaimKey::Email => "email",
            ClaimKey::Nationality => "nationality",
            ClaimKey::DocumentNumber => "document_number",
            ClaimKey::Address => "address",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.as_str() == text)
    }
}

/// One verified fact about the user, as the claim source knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedValue {
    pub value: Value,
    /// `sms_otp`, `identity_verification`.
    pub source: &'static str,
    pub verified_at: Timestamp,
}

/// Whether the user has a verified value for a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerificationStatus {
    Verified,
    Unavailable,
}

/// One requested claim as the user shares it (spec §2.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// The verified value, `null` when unavailable. Open on purpose: a string for every key
    /// today; `address` will be an object once identity verification provides it.
    pub value: Value,
    pub verified: bool,
    pub verification_status: VerificationStatus,
    /// `sms_otp` or `identity_verification`; absent when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<Timestamp>,
}

/// The claims object of spec §2.2: every requested key, in the order asked for, with its
/// [`Claim`]. On the wire an object keyed by claim name (`{"phone_number": {…}, …}`); stored
/// with grants and tokens in that same form.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Claims(Vec<(String, Claim)>);

impl Claims {
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Claim)> {
        self.0.iter().map(|(key, claim)| (key.as_str(), claim))
    }

    pub fn get(&self, key: &str) -> Option<&Claim> {
        self.iter().find(|(k, _)| *k == key).map(|(_, claim)| claim)
    }

    /// Claims as stored with a grant or token (the JSON this type writes).
    pub fn from_stored(stored: &Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(stored)
    }
}

impl Serialize for Claims {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, claim) in &self.0 {
            map.serialize_entry(key, claim)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Claims {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Claims;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of claims keyed by claim name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Claims, A::Error> {
                let mut claims = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry::<String, Claim>()? {
                    claims.push(entry);
                }
                Ok(Claims(claims))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

/// The claims object of spec §2.2: every requested key, `unavailable` when the user has no
/// verified value for it.
pub fn claims_object(requested: &[ClaimKey], known: &[(ClaimKey, VerifiedValue)]) -> Claims {
    let claims = requested
        .iter()
        .map(|key| {
            let claim = match known.iter().find(|(k, _)| k == key) {
                Some((_, known)) => Claim {
                    value: known.value.clone(),
                    verified: true,
                    verification_status: VerificationStatus::Verified,
                    verification_source: Some(known.source.to_owned()),
                    verified_at: Some(known.verified_at),
                },
                None => Claim {
                    value: Value::Null,
                    verified: false,
                    verification_status: VerificationStatus::Unavailable,
                    verification_source: None,
                    verified_at: None,
                },
            };
            (key.as_str().to_owned(), claim)
        })
        .collect();
    Claims(claims)
}

/// What an OAUTH consent session asks for (spec §2.2), stored under the session's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRequest {
    pub session_id: SessionId,
    pub application_id: ApplicationId,
    pub client_id: ClientId,
    pub environment: Environment,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub code_challenge_method: ChallengeMethod,
    pub claims: Vec<ClaimKey>,
    pub scopes: Vec<String>,
    pub state: Option<String>,
    pub description: Option<String>,
    pub created_at: Timestamp,
}

/// What a grant's sealed code is bound to (ADR 0026): the grant's code id.
pub fn grant_code_sealed_for(code_id: &str) -> SealedFor<'_> {
    SealedFor::new(GRANT_CODE_SEALED_KIND, code_id)
}

/// The sealed-value kind of grant codes.
pub const GRANT_CODE_SEALED_KIND: &str = "oauth.authorization-code";

/// An approved request's authorization code and what it grants.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// The code's id: the lookup key (see the `code` module).
    pub code_id: String,
    /// Keyed hash of the whole code, which a presented code must match.
    pub code_hash: String,
    /// The code itself, sealed, so the status endpoint can show it until it is exchanged.
    pub sealed_code: Sealed,
    pub session_id: SessionId,
    pub application_id: ApplicationId,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub code_challenge_method: ChallengeMethod,
    /// The user's phone (the token's subject).
    pub subject: String,
    pub scopes: Vec<String>,
    /// The claims object as approved, as stored ([`Claims::from_stored`] reads it).
    pub claims: Value,
    pub state: Option<String>,
    pub approved_at: Timestamp,
    pub expires_at: Timestamp,
    pub consumed_at: Option<Timestamp>,
    /// The token issued from this code, once exchanged.
    pub token_id: Option<String>,
}

/// A grant as the token exchange reads it: with its consent session's status and environment,
/// read in the same statement (the code is only redeemable while the session reads approved,
/// and only in the session's environment).
#[derive(Debug, Clone, PartialEq)]
pub struct GrantWithSession {
    pub grant: Grant,
    /// `None` when the session no longer exists.
    pub session: Option<SessionState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionState {
    pub status: SessionStatus,
    pub environment: Environment,
}

/// An access token as issued, for introspection, userinfo and revocation.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuedToken {
    pub token_id: String,
    pub application_id: ApplicationId,
    pub client_id: ClientId,
    pub environment: Environment,
    pub subject: String,
    pub scopes: Vec<String>,
    pub claims: Value,
    pub issued_at: Timestamp,
    pub expires_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_keep_the_requested_order_and_their_exact_form() {
        let known = [(
            ClaimKey::PhoneNumber,
            VerifiedValue {
                value: Value::String("+15551234567".into()),
                source: "sms_otp",
                verified_at: Timestamp::from_millis(1_000),
            },
        )];
        let claims = claims_object(&[ClaimKey::PhoneNumber, ClaimKey::GivenName], &known);
        let text = serde_json::to_string(&claims).unwrap();
        assert_eq!(
            text,
            r#"{"phone_number":{"value":"+15551234567","verified":true,"verificationStatus":"verified","verificationSource":"sms_otp","verifiedAt":"1970-01-01T00:00:01.000Z"},"given_name":{"value":null,"verified":false,"verificationStatus":"unavailable"}}"#
        );
        assert_eq!(serde_json::from_str::<Claims>(&text).unwrap(), claims);
        // Through a stored `Value` (whose key order depends on serde_json's features).
        let stored = serde_json::to_value(&claims).unwrap();
        let read = serde_json::to_value(Claims::from_stored(&stored).unwrap()).unwrap();
        assert_eq!(read, stored);
        let keys: Vec<&str> = claims.iter().map(|(key, _)| key).collect();
        assert_eq!(keys, ["phone_number", "given_name"]);
        assert!(claims.get("given_name").is_some_and(|c| !c.verified));
        assert!(Claims::from_stored(&serde_json::json!({"phone_number": {"value": 1}})).is_err());
    }
}
