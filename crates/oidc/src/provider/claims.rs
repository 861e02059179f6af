//! Scopes to our claim keys, and our claims to OpenID Connect's standard claims (docs/oidc.md).

use idconsent_oauth::{ClaimKey, Claims};
use serde_json::{Map, Value, json};

/// The claims each scope asks for (OpenID Connect Core §5.4, plus `identity` for the document
/// data identity verification proves).
pub const SCOPE_CLAIMS: [(&str, &[ClaimKey]); 5] = [
    ("phone", &[ClaimKey::PhoneNumber]),
    (
        "profile",
        &[
            ClaimKey::Name,
            ClaimKey::GivenName,
            ClaimKey::FamilyName,
            ClaimKey::Birthdate,
        ],
    ),
    ("email", &[ClaimKey::Email]),
    ("address", &[ClaimKey::Address]),
    (
        "identity",
        &[ClaimKey::Nationality, ClaimKey::DocumentNumber],
    ),
];

/// The claim keys `scopes` ask for, each once, in scope order; unknown scopes ask for nothing
/// (Core §3.1.2.1: scopes not understood are ignored).
pub(crate) fn claims_of_scopes(scopes: &[String]) -> Vec<ClaimKey> {
    let mut keys = Vec::new();
    for scope in scopes {
        if let Some((_, claims)) = SCOPE_CLAIMS.iter().find(|(name, _)| name == scope) {
            for key in *claims {
                if !keys.contains(key) {
                    keys.push(*key);
                }
            }
        }
    }
    keys
}

/// The approved claims as standard claims: each verified value under its name, with
/// `phone_number_verified` / `email_verified`, and where each came from under
/// `verification` (`{claim: {source, verified_at}}`). Unavailable claims are left out (Core
/// §5.3.2: a claim without a value is omitted).
pub fn standard_claims(claims: &Claims) -> Map<String, Value> {
    let mut out = Map::new();
    let mut verification = Map::new();
    for (key, claim) in claims.iter() {
        if !claim.verified || claim.value.is_null() {
            continue;
        }
        out.insert(key.to_owned(), claim.value.clone());
        match key {
            "phone_number" => {
                out.insert("phone_number_verified".into(), Value::Bool(true));
            }
            "email" => {
                out.insert("email_verified".into(), Value::Bool(true));
            }
            _ => {}
        }
        verification.insert(
            key.to_owned(),
            json!({
                "source": claim.verification_source,
                "verified_at": claim.verified_at.map(|at| at.as_secs()),
            }),
        );
    }
    if !verification.is_empty() {
        out.insert("verification".into(), Value::Object(verification));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_name_their_claims_once_and_unknown_scopes_nothing() {
        let scopes: Vec<String> = ["openid", "phone", "profile", "phone", "offline_access"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(
            claims_of_scopes(&scopes),
            [
                ClaimKey::PhoneNumber,
                ClaimKey::Name,
                ClaimKey::GivenName,
                ClaimKey::FamilyName,
                ClaimKey::Birthdate
            ]
        );
    }

    #[test]
    fn verified_claims_become_standard_ones_and_unavailable_ones_are_left_out() {
        let stored = json!({
            "phone_number": {"value": "+15551234567", "verified": true,
                "verificationStatus": "verified", "verificationSource": "sms_otp",
                "verifiedAt": "2026-11-21T10:00:00.000Z"},
            "given_name": {"value": null, "verified": false, "verificationStatus": "unavailable"}
        });
        let claims = Claims::from_stored(&stored).unwrap();
        let out = Value::Object(standard_claims(&claims));
        assert_eq!(
            out,
            json!({
                "phone_number": "+15551234567",
                "phone_number_verified": true,
                "verification": {"phone_number": {"source": "sms_otp", "verified_at": 1_795_255_200}}
            })
        );
    }
}
