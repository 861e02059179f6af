//! PKCE (RFC 7636): code challenge methods and verification.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_kernel::constant_time_eq;
use sha2::{Digest, Sha256};

/// `S256` (default) or `plain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChallengeMethod {
    S256,
    Plain,
}

impl ChallengeMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            ChallengeMethod::S256 => "S256",
            ChallengeMethod::Plain => "plain",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "S256" => Some(ChallengeMethod::S256),
            "plain" => Some(ChallengeMethod::Plain),
            _ => None,
        }
    }
}

/// A verifier or challenge: 43–128 characters of `[A-Z a-z 0-9 - . _ ~]` (RFC 7636 §4.1).
pub fn is_well_formed(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The challenge a verifier produces with `method`.
pub fn challenge_of(verifier: &str, method: ChallengeMethod) -> String {
    match method {
        ChallengeMethod::S256 => URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())),
        ChallengeMethod::Plain => verifier.to_owned(),
    }
}

/// Whether `verifier` answers `challenge`, compared in constant time.
pub fn verify(verifier: &str, challenge: &str, method: ChallengeMethod) -> bool {
    if !is_well_formed(verifier) {
        return false;
    }
    constant_time_eq(
        challenge_of(verifier, method).as_bytes(),
        challenge.as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// `vectors.json` → `pkce_rfc7636_appendix_b`, byte for byte.
    #[test]
    fn reproduces_the_rfc_7636_appendix_b_vector() {
        let vectors: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/vectors/vectors.json"
        )))
        .unwrap();
        let vector = &vectors["pkce_rfc7636_appendix_b"];
        assert_eq!(vector["method"], "S256");
        let verifier = vector["codeVerifier"].as_str().unwrap();
        let challenge = vector["codeChallenge"].as_str().unwrap();
        assert_eq!(challenge_of(verifier, ChallengeMethod::S256), challenge);
        assert!(verify(verifier, challenge, ChallengeMethod::S256));
        assert!(verify(verifier, verifier, ChallengeMethod::Plain));
    }

    #[test]
    fn wrong_or_malformed_verifiers_fail() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = challenge_of(verifier, ChallengeMethod::S256);
        let other = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXl";
        assert!(!verify(other, &challenge, ChallengeMethod::S256));
        assert!(!verify("short", "short", ChallengeMethod::Plain));
        assert!(!verify(verifier, &challenge, ChallengeMethod::Plain));
        assert!(!verify(
            &format!("{verifier} "),
            &challenge,
            ChallengeMethod::S256
        ));
    }
}
