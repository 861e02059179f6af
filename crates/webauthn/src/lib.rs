#![doc = include_str!("../README.md")]

mod assertion;

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_enduser::ports::{
    CeremonyStart, NewPasskey, PasskeyCeremony, PasskeyError, StoredPasskey, VerifiedAssertion,
};
use serde_json::Value;
use webauthn_rs::prelude::{
    Passkey, PasskeyRegistration, RegisterPublicKeyCredential, Url, Uuid, Webauthn,
    WebauthnBuilder, WebauthnError,
};

use crate::assertion::{
    AllowedCredential, Assertion, AssertionState, Expectations, PublicKey, STATE_VERSION,
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

/// The [`PasskeyCeremony`] port: registration on webauthn-rs passkeys (its state serialised
/// with the `danger-allow-state-serialisation` layout of the pinned version), assertions
/// verified with ring against a compact state of our own. User verification is required.
#[derive(Clone)]
pub struct WebauthnCeremony {
    webauthn: Webauthn,
    rp_id: String,
    origins: Vec<Url>,
    expect: Expectations,
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
        let expect = Expectations::new(
            rp_id,
            origins.iter().map(assertion::serialised_origin).collect(),
        );
        Ok(Self {
            webauthn,
            rp_id: rp_id.to_owned(),
            origins,
            expect,
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
        // Only keys assertions can be verified with are stored.
        PublicKey::of_passkey(&passkey).map_err(PasskeyError::Refused)?;
        let stored = to_string(&passkey)?;
        Ok(NewPasskey {
            credential_id: URL_SAFE_NO_PAD.encode(passkey.cred_id()),
            counter: stored_flags(&stored)?.counter,
            passkey: stored,
        })
    }

    fn start_authentication(
        &self,
        passkeys: &[StoredPasskey<'_>],
        challenge: [u8; 32],
    ) -> Result<CeremonyStart, PasskeyError> {
        if passkeys.is_empty() {
            return Err(PasskeyError::Refused(
                "no passkey to authenticate with".into(),
            ));
        }
        let mut parsed = Vec::with_capacity(passkeys.len());
        let mut credentials = Vec::with_capacity(passkeys.len());
        for stored in passkeys {
            let passkey = serde_json::from_str::<Passkey>(stored.passkey)
                .map_err(|err| internal(format!("a stored passkey does not parse: {err}")))?;
            let key = PublicKey::of_passkey(&passkey)
                .map_err(|reason| internal(format!("a stored passkey: {reason}")))?;
            credentials.push(AllowedCredential {
                id: URL_SAFE_NO_PAD.encode(passkey.cred_id()),
                key,
                counter: stored.counter,
                backup_eligible: stored_flags(stored.passkey)?.backup_eligible,
            });
            parsed.push(passkey);
        }
        // webauthn-rs builds the options (allowCredentials, UV required, timeout); its state
        // is dropped: ours is below.
        let (mut options, _) = self
            .webauthn
            .start_passkey_authentication(&parsed)
            .map_err(|err| internal(format!("starting authentication: {err}")))?;
        // webauthn-rs draws a random challenge; ours commits to what the user is shown.
        options.public_key.challenge = challenge.to_vec();
        let state = AssertionState {
            v: STATE_VERSION,
            rp_id: self.rp_id.clone(),
            challenge: URL_SAFE_NO_PAD.encode(challenge),
            credentials,
        };
        Ok(CeremonyStart {
            options: to_value(&options)?,
            state: to_string(&state)?,
        })
    }

    fn finish_authentication(
        &self,
        state: &str,
        credential: &Value,
    ) -> Result<VerifiedAssertion, PasskeyError> {
        let state: AssertionState = from_state(state)?;
        let assertion = Assertion::parse(credential)?;
        self.expect.verify(&state, &assertion)
    }

    fn asserted_credential_id(&self, credential: &Value) -> Result<String, PasskeyError> {
        Ok(URL_SAFE_NO_PAD.encode(Assertion::parse(credential)?.raw_id))
    }
}

/// What a stored passkey (webauthn-rs's `{"cred": Credential}`) says besides its key.
#[derive(Debug, serde::Deserialize)]
struct StoredFlags {
    counter: u32,
    backup_eligible: bool,
}

fn stored_flags(passkey: &str) -> Result<StoredFlags, PasskeyError> {
    #[derive(serde::Deserialize)]
    struct Stored {
        cred: StoredFlags,
    }
    serde_json::from_str::<Stored>(passkey)
        .map(|stored| stored.cred)
        .map_err(|err| internal(format!("a stored passkey has no counter or flags: {err}")))
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
    assertion::decode_b64url(text)
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
            ceremony.start_authentication(
                &[StoredPasskey {
                    passkey: "{}",
                    counter: 0
                }],
                [0; 32]
            ),
            Err(PasskeyError::Internal(_))
        ));
    }
}
