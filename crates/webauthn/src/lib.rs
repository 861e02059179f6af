#![doc = include_str!("../README.md")]

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_enduser::ports::{
    CeremonyStart, NewPasskey, PasskeyCeremony, PasskeyError, VerifiedAssertion,
};
use serde_json::Value;
use webauthn_rs::prelude::{
    Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Url, Uuid, Webauthn, WebauthnBuilder, WebauthnError,
};

/// `IDC_RP_ID` when unset.
pub const DEFAULT_RP_ID: &str = "localhost";
/// `IDC_RP_ORIGINS` when unset.
pub const DEFAULT_RP_ORIGINS: &str = "http://localhost:8080";
/// How long the authenticator is given (the options' `timeout`): a challenge lives two minutes.
pub const CEREMONY_TIMEOUT: Duration = Duration::from_secs(120);

/// A relying-party configuration that webauthn-rs does not accept.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no relying-party origin configured")]
    NoOrigin,
    #[error("invalid relying-party origin {origin:?}: {reason}")]
    InvalidOrigin { origin: String, reason: String },
    /// The RP ID must be the first origin's host or a registrable suffix of it.
    #[error("RP ID {rp_id:?} is not an effective domain of origin {origin:?}")]
    RpIdMismatch { rp_id: String, origin: String },
}

/// The [`PasskeyCeremony`] port on webauthn-rs passkeys: user verification required, the
/// ceremony state serialised with the `danger-allow-state-serialisation` layout of the pinned
/// webauthn-rs version.
#[derive(Clone)]
pub struct WebauthnCeremony {
    webauthn: Webauthn,
    rp_id: String,
    origins: Vec<Url>,
}

impl fmt::Debug for WebauthnCeremony {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebauthnCeremony")
            .field("rp_id", &self.rp_id)
            .field(
                "origins",
                &self.origins.iter().map(Url::as_str).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl WebauthnCeremony {
    /// A relying party `rp_id` accepting assertions from `origins` (at least one; `rp_id` must be
    /// the first origin's host or a suffix of it). Origins match exactly: scheme, host and port.
    pub fn new<S: AsRef<str>>(rp_id: &str, origins: &[S]) -> Result<Self, ConfigError> {
        let origins = origins
            .iter()
            .map(|origin| {
                let origin = origin.as_ref().trim();
                Url::parse(origin).map_err(|err| ConfigError::InvalidOrigin {
                    origin: origin.to_owned(),
                    reason: err.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (first, more) = origins.split_first().ok_or(ConfigError::NoOrigin)?;
        let mismatch = || ConfigError::RpIdMismatch {
            rp_id: rp_id.to_owned(),
            origin: first.to_string(),
        };
        let mut builder = WebauthnBuilder::new(rp_id, first)
            .map_err(|_| mismatch())?
            .timeout(CEREMONY_TIMEOUT);
        for origin in more {
            builder = builder.append_allowed_origin(origin);
        }
        let webauthn = builder.build().map_err(|_| mismatch())?;
        Ok(Self {
            webauthn,
            rp_id: rp_id.to_owned(),
            origins,
        })
    }

    /// [`WebauthnCeremony::new`] with the origins as the comma-separated list of
    /// `IDC_RP_ORIGINS` (empty items are ignored).
    pub fn from_origin_list(rp_id: &str, origins: &str) -> Result<Self, ConfigError> {
        let origins: Vec<&str> = origins
            .split(',')
            .map(str::trim)
            .filter(|origin| !origin.is_empty())
            .collect();
        Self::new(rp_id, &origins)
    }

    pub fn rp_id(&self) -> &str {
        &self.rp_id
    }

    pub fn origins(&self) -> &[Url] {
        &self.origins
    }
}

impl PasskeyCeremony for WebauthnCeremony {
    fn start_registration(
        &self,
        user_handle: &str,
        name: &str,
        display_name: &str,
        existing: &[String],
    ) -> Result<CeremonyStart, PasskeyError> {
        let handle: [u8; 16] = hex::decode(user_handle)
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| internal("the user handle is not 16 bytes of hex"))?;
        let exclude = existing
            .iter()
            .map(|id| {
                decode_b64url(id).ok_or_else(|| internal("a stored credential id is not base64url"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (options, state) = self
            .webauthn
            .start_passkey_registration(Uuid::from_bytes(handle), name, display_name, Some(exclude))
            .map_err(|err| internal(format!("starting registration: {err}")))?;
        Ok(CeremonyStart {
            options: to_value(&options)?,
            state: to_string(&state)?,
        })
    }

    fn finish_registration(
        &self,
        state: &str,
        credential: &Value,
    ) -> Result<NewPasskey, PasskeyError> {
        let state: PasskeyRegistration = from_state(state)?;
        let credential: RegisterPublicKeyCredential = from_credential(credential)?;
        let passkey = self
            .webauthn
            .finish_passkey_registration(&credential, &state)
            .map_err(refusal)?;
        Ok(NewPasskey {
            credential_id: URL_SAFE_NO_PAD.encode(passkey.cred_id()),
            passkey: to_string(&passkey)?,
        })
    }

    fn start_authentication(
        &self,
        passkeys: &[String],
        challenge: [u8; 32],
    ) -> Result<CeremonyStart, PasskeyError> {
        if passkeys.is_empty() {
            return Err(PasskeyError::Refused(
                "no passkey to authenticate with".into(),
            ));
        }
        let passkeys = passkeys
            .iter()
            .map(|passkey| {
                serde_json::from_str::<Passkey>(passkey)
                    .map_err(|err| internal(format!("a stored passkey does not parse: {err}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (mut options, state) = self
            .webauthn
            .start_passkey_authentication(&passkeys)
            .map_err(|err| internal(format!("starting authentication: {err}")))?;
        // webauthn-rs draws a random challenge; ours commits to what the user is shown, so it
        // replaces the random one in the options and in the state `finish` compares against.
        options.public_key.challenge = challenge.to_vec();
        let state = with_challenge(&state, &challenge)?;
        Ok(CeremonyStart {
            options: to_value(&options)?,
            state,
        })
    }

    fn finish_authentication(
        &self,
        state: &str,
        credential: &Value,
    ) -> Result<VerifiedAssertion, PasskeyError> {
        let state: PasskeyAuthentication = from_state(state)?;
        let credential: PublicKeyCredential = from_credential(credential)?;
        let result = self
            .webauthn
            .finish_passkey_authentication(&credential, &state)
            .map_err(refusal)?;
        // webauthn-rs already refuses a missing UV flag under the Required policy; this keeps
        // the guarantee should that policy ever change.
        if !result.user_verified() {
            return Err(PasskeyError::Refused("user not verified".into()));
        }
        let updated_passkey = if result.needs_update() {
            let mut passkey: Passkey = allowed_passkey(&state, result.cred_id())?;
            match passkey.update_credential(&result) {
                Some(true) => Some(to_string(&passkey)?),
                _ => None,
            }
        } else {
            None
        };
        Ok(VerifiedAssertion {
            credential_id: URL_SAFE_NO_PAD.encode(result.cred_id()),
            updated_passkey,
        })
    }

    fn asserted_credential_id(&self, credential: &Value) -> Result<String, PasskeyError> {
        let credential: PublicKeyCredential = from_credential(credential)?;
        Ok(URL_SAFE_NO_PAD.encode(credential.raw_id))
    }
}

/// Where the pinned webauthn-rs keeps the challenge in a serialised [`PasskeyAuthentication`]
/// (`AuthenticationState.challenge`, base64url without padding).
const STATE_CHALLENGE: [&str; 2] = ["ast", "challenge"];

/// The serialised `state` with its challenge replaced by `challenge`; checked by parsing it back.
fn with_challenge(state: &PasskeyAuthentication, challenge: &[u8]) -> Result<String, PasskeyError> {
    let mut json = serde_json::to_value(state)
        .map_err(|err| internal(format!("serialising the authentication state: {err}")))?;
    let slot = json
        .get_mut(STATE_CHALLENGE[0])
        .and_then(|ast| ast.get_mut(STATE_CHALLENGE[1]))
        .filter(|slot| slot.is_string())
        .ok_or_else(|| internal("the authentication state has no challenge where expected"))?;
    *slot = Value::String(URL_SAFE_NO_PAD.encode(challenge));
    serde_json::from_value::<PasskeyAuthentication>(json.clone())
        .map_err(|err| internal(format!("the rewritten authentication state: {err}")))?;
    Ok(json.to_string())
}

/// The passkey `id` of the state's allowed set, as webauthn-rs verified against it.
fn allowed_passkey(state: &PasskeyAuthentication, id: &[u8]) -> Result<Passkey, PasskeyError> {
    // The state keeps each allowed passkey's credential, which is what a `Passkey` serialises
    // as (`{"cred": Credential}`).
    let json = serde_json::to_value(state)
        .map_err(|err| internal(format!("serialising the authentication state: {err}")))?;
    json.get("ast")
        .and_then(|ast| ast.get("credentials"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|cred| {
            serde_json::from_value::<Passkey>(serde_json::json!({ "cred": cred })).ok()
        })
        .find(|passkey| passkey.cred_id().as_slice() == id)
        .ok_or_else(|| internal("the verified passkey is not in the authentication state"))
}

fn refusal(err: WebauthnError) -> PasskeyError {
    let reason = match err {
        WebauthnError::MismatchedChallenge => "wrong challenge",
        WebauthnError::InvalidRPOrigin => "wrong origin",
        WebauthnError::InvalidRPIDHash => "wrong RP ID",
        WebauthnError::UserNotPresent => "user not present",
        WebauthnError::UserNotVerified => "user not verified",
        WebauthnError::AuthenticationFailure | WebauthnError::SignatureInvalid => "bad signature",
        WebauthnError::CredentialPossibleCompromise => "signature counter did not advance",
        WebauthnError::CredentialNotFound => "credential not allowed",
        WebauthnError::InvalidClientDataType => "wrong ceremony type",
        WebauthnError::CredentialAlteredAlgFromRequest
        | WebauthnError::CredentialExcludedFromRequest => "credential excluded or altered",
        WebauthnError::CredentialBackupEligibilityInconsistent
        | WebauthnError::CredentialMayNotBeHardwareBound => "inconsistent backup flags",
        other => return PasskeyError::Refused(format!("verification failed: {other}")),
    };
    PasskeyError::Refused(reason.into())
}

fn from_state<T: serde::de::DeserializeOwned>(state: &str) -> Result<T, PasskeyError> {
    serde_json::from_str(state)
        .map_err(|err| internal(format!("the stored ceremony state does not parse: {err}")))
}

fn from_credential<T: serde::de::DeserializeOwned>(credential: &Value) -> Result<T, PasskeyError> {
    T::deserialize(credential).map_err(|err| PasskeyError::Malformed(err.to_string()))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, PasskeyError> {
    serde_json::to_value(value).map_err(|err| internal(format!("serialising options: {err}")))
}

fn to_string<T: serde::Serialize>(value: &T) -> Result<String, PasskeyError> {
    serde_json::to_string(value).map_err(|err| internal(format!("serialising: {err}")))
}

/// base64url with or without padding.
fn decode_b64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

fn internal(message: impl Into<String>) -> PasskeyError {
    PasskeyError::Internal(message.into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn config_is_checked() {
        assert!(WebauthnCeremony::from_origin_list(DEFAULT_RP_ID, DEFAULT_RP_ORIGINS).is_ok());
        assert!(matches!(
            WebauthnCeremony::from_origin_list("localhost", " , "),
            Err(ConfigError::NoOrigin)
        ));
        assert!(matches!(
            WebauthnCeremony::new("example.com", &["https://idc.example.org"]),
            Err(ConfigError::RpIdMismatch { .. })
        ));
        assert!(matches!(
            WebauthnCeremony::new("example.com", &["not a url"]),
            Err(ConfigError::InvalidOrigin { .. })
        ));
        let ceremony = WebauthnCeremony::from_origin_list(
            "example.com",
            "https://id.example.com, https://app.example.com:8443",
        )
        .unwrap();
        assert_eq!(ceremony.origins().len(), 2);
        assert_eq!(ceremony.rp_id(), "example.com");
    }

    #[test]
    fn registration_options_require_uv_and_exclude_existing() {
        let ceremony =
            WebauthnCeremony::from_origin_list(DEFAULT_RP_ID, DEFAULT_RP_ORIGINS).unwrap();
        let start = ceremony
            .start_registration(&"ab".repeat(16), "+15550100", "Ada", &["AQID".to_owned()])
            .unwrap();
        let options = &start.options["publicKey"];
        assert_eq!(
            options["authenticatorSelection"]["userVerification"],
            "required"
        );
        assert_eq!(options["excludeCredentials"][0]["id"], "AQID");
        assert_eq!(options["user"]["id"], URL_SAFE_NO_PAD.encode([0xab; 16]));
        assert_eq!(options["rp"]["id"], "localhost");
        assert!(matches!(
            ceremony.start_registration("abcd", "n", "d", &[]),
            Err(PasskeyError::Internal(_))
        ));
    }

    #[test]
    fn authentication_needs_a_passkey() {
        let ceremony =
            WebauthnCeremony::from_origin_list(DEFAULT_RP_ID, DEFAULT_RP_ORIGINS).unwrap();
        assert!(matches!(
            ceremony.start_authentication(&[], [0; 32]),
            Err(PasskeyError::Refused(_))
        ));
        assert!(matches!(
            ceremony.start_authentication(&["{}".to_owned()], [0; 32]),
            Err(PasskeyError::Internal(_))
        ));
    }
}
