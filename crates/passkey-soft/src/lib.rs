#![doc = include_str!("../README.md")]

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;
use webauthn_authenticator_rs::WebauthnAuthenticator as _;
use webauthn_authenticator_rs::prelude::{
    CreationChallengeResponse, RequestChallengeResponse, Url, WebauthnCError,
};
use webauthn_authenticator_rs::softtoken::SoftToken;

#[derive(Debug, thiserror::Error)]
pub enum SoftPasskeyError {
    #[error("invalid origin {0:?}")]
    Origin(String),
    /// The options are not WebAuthn JSON of the expected shape (`{"publicKey": {...}}`).
    #[error("invalid options: {0}")]
    Options(String),
    /// The credential JSON given to a test hook is not of the expected shape.
    #[error("invalid credential: {0}")]
    Credential(String),
    /// The authenticator refused (e.g. the origin is not within the RP ID, unknown credential)
    /// or failed.
    #[error("authenticator: {0}")]
    Authenticator(#[from] WebauthnCError),
}

/// A software passkey: webauthn-authenticator-rs's `SoftToken` (ES256 credentials, packed
/// attestation, one signature counter shared by its credentials) claiming user verification.
///
/// Its saved form holds the private keys unprotected: for tests and development wallets only.
pub struct SoftPasskey {
    token: SoftToken,
}

impl fmt::Debug for SoftPasskey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SoftPasskey").finish_non_exhaustive()
    }
}

impl SoftPasskey {
    /// A new authenticator with no credentials that performs user verification.
    pub fn new() -> Result<Self, SoftPasskeyError> {
        // `true`: the token sets the UV flag when UV is required (it has no real UV to perform;
        // without it, it refuses every ceremony that requires UV).
        let (token, _ca) = SoftToken::new(true)?;
        Ok(Self { token })
    }

    /// The authenticator [`SoftPasskey::save`] wrote.
    pub fn load(bytes: &[u8]) -> Result<Self, SoftPasskeyError> {
        Ok(Self {
            token: SoftToken::from_cbor(bytes)?,
        })
    }

    /// The whole authenticator (keys and counter) as CBOR, to store in a file.
    pub fn save(&self) -> Result<Vec<u8>, SoftPasskeyError> {
        Ok(self.token.to_cbor()?)
    }

    /// An independent copy with the same keys and counter: authenticating with the copy after
    /// the original has authenticated repeats counter values (a cloned authenticator).
    pub fn snapshot(&self) -> Result<Self, SoftPasskeyError> {
        Self::load(&self.save()?)
    }

    /// `navigator.credentials.create()` at `origin` with the server's `{"publicKey": {...}}`
    /// options; returns the `RegisterPublicKeyCredential` JSON.
    pub fn register(&mut self, origin: &str, options: &Value) -> Result<Value, SoftPasskeyError> {
        let options: CreationChallengeResponse = serde_json::from_value(options.clone())
            .map_err(|err| SoftPasskeyError::Options(err.to_string()))?;
        let credential = self.token.do_registration(parse_origin(origin)?, options)?;
        to_json(&credential)
    }

    /// `navigator.credentials.get()` at `origin` with the server's `{"publicKey": {...}}`
    /// options; returns the `PublicKeyCredential` JSON (UP and, when required, UV set).
    pub fn authenticate(
        &mut self,
        origin: &str,
        options: &Value,
    ) -> Result<Value, SoftPasskeyError> {
        let options: RequestChallengeResponse = serde_json::from_value(options.clone())
            .map_err(|err| SoftPasskeyError::Options(err.to_string()))?;
        let credential = self
            .token
            .do_authentication(parse_origin(origin)?, options)?;
        to_json(&credential)
    }

    /// Test hook: a genuine assertion over the server's challenge whose authenticator data has
    /// the UP flag but **not UV** (the token is asked with `userVerification: "discouraged"`,
    /// as if the client had downgraded the request). A relying party requiring UV must refuse it.
    pub fn authenticate_without_uv(
        &mut self,
        origin: &str,
        options: &Value,
    ) -> Result<Value, SoftPasskeyError> {
        let mut options = options.clone();
        let slot = options
            .get_mut("publicKey")
            .and_then(Value::as_object_mut)
            .ok_or_else(|| SoftPasskeyError::Options("no publicKey object".into()))?;
        slot.insert("userVerification".into(), Value::from("discouraged"));
        self.authenticate(origin, &options)
    }
}

/// Test hook: flips the last bit of `response.signature` of a `PublicKeyCredential` JSON (the
/// DER stays well-formed, the signature no longer verifies).
pub fn tamper_signature(credential: &mut Value) -> Result<(), SoftPasskeyError> {
    let slot = credential
        .get_mut("response")
        .and_then(|response| response.get_mut("signature"))
        .ok_or_else(|| SoftPasskeyError::Credential("no response.signature".into()))?;
    let mut signature = slot
        .as_str()
        .and_then(|text| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok())
        .ok_or_else(|| SoftPasskeyError::Credential("signature is not base64url".into()))?;
    let last = signature
        .last_mut()
        .ok_or_else(|| SoftPasskeyError::Credential("empty signature".into()))?;
    *last ^= 0x01;
    *slot = Value::String(URL_SAFE_NO_PAD.encode(signature));
    Ok(())
}

fn parse_origin(origin: &str) -> Result<Url, SoftPasskeyError> {
    Url::parse(origin).map_err(|_| SoftPasskeyError::Origin(origin.to_owned()))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, SoftPasskeyError> {
    serde_json::to_value(value).map_err(|_| SoftPasskeyError::Authenticator(WebauthnCError::Json))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn tampering_flips_one_bit_of_the_signature() {
        let mut credential = json!({ "response": { "signature": "MEUCIQD_AA" } });
        tamper_signature(&mut credential).unwrap();
        let after = URL_SAFE_NO_PAD
            .decode(credential["response"]["signature"].as_str().unwrap())
            .unwrap();
        let before = URL_SAFE_NO_PAD.decode("MEUCIQD_AA").unwrap();
        assert_eq!(after.len(), before.len());
        assert_eq!(after[..after.len() - 1], before[..before.len() - 1]);
        assert_eq!(after[after.len() - 1], before[before.len() - 1] ^ 1);
        assert!(tamper_signature(&mut json!({})).is_err());
    }

    #[test]
    fn saves_and_loads() {
        let passkey = SoftPasskey::new().unwrap();
        let saved = passkey.save().unwrap();
        let loaded = SoftPasskey::load(&saved).unwrap();
        assert_eq!(loaded.save().unwrap(), saved);
        assert!(SoftPasskey::load(b"not cbor").is_err());
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut passkey = SoftPasskey::new().unwrap();
        assert!(matches!(
            passkey.register("http://localhost:8080", &json!({})),
            Err(SoftPasskeyError::Options(_))
        ));
        assert!(matches!(
            passkey.authenticate_without_uv("http://localhost:8080", &json!({})),
            Err(SoftPasskeyError::Options(_))
        ));
    }
}
