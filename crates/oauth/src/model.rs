//! Access requests, grants (authorization codes) and issued tokens.

use idconsent_consent::SessionStatus;
use idconsent_kernel::id::{ApplicationId, ClientId, SessionId};
use idconsent_kernel::{Environment, Sealed, Timestamp};
use serde_json::{Map, Value, json};

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

/// The claims object of spec §2.2: every requested key, `unavailable` when the user has no
/// verified value for it.
pub fn claims_object(requested: &[ClaimKey], known: &[(ClaimKey, VerifiedValue)]) -> Value {
    let mut claims = Map::new();
    for key in requested {
        let claim = match known.iter().find(|(k, _)| k == key) {
            Some((_, known)) => json!({
                "value": known.value,
                "verified": true,
                "verificationStatus": "verified",
                "verificationSource": known.source,
                "verifiedAt": known.verified_at.to_rfc3339(),
            }),
            None => json!({
                "value": null,
                "verified": false,
                "verificationStatus": "unavailable",
            }),
        };
        claims.insert(key.as_str().to_owned(), claim);
    }
    Value::Object(claims)
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
    /// The claims object as approved.
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
