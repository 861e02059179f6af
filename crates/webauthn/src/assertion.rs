//! Assertion verification (WebAuthn Level 2, §7.2 "Verifying an Authentication Assertion") with
//! ring, against a compact state of our own.
//!
//! webauthn-rs still registers passkeys and builds the request options; verifying an assertion
//! here avoids its RustCrypto P-256 (≈ 250 µs against ≈ 70 µs in ring) and the parsing and
//! re-serialising of its JSON state on every call.

use base64::Engine as _;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, URL_SAFE_NO_PAD};
use idconsent_enduser::ports::{PasskeyError, VerifiedAssertion};
use ring::digest::{SHA256, digest};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use webauthn_rs::prelude::{COSEAlgorithm, COSEKeyType, ECDSACurve, Passkey};

/// base64url, with or without padding (as webauthn-rs reads credentials).
const B64URL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The `state` of an authentication ceremony, as `start_authentication` stores it with the
/// challenge. Version 1 of our own layout: nothing of webauthn-rs's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AssertionState {
    /// Layout version ([`STATE_VERSION`]).
    pub v: u32,
    /// The RP ID the options named; finish refuses to run under another configuration.
    pub rp_id: String,
    /// The challenge, base64url without padding, exactly as sent in the options.
    pub challenge: String,
    /// The credentials the options allowed.
    pub credentials: Vec<AllowedCredential>,
}

pub(crate) const STATE_VERSION: u32 = 1;

/// An allowed credential: its id, public key and what the relying party last stored for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AllowedCredential {
    /// base64url without padding.
    pub id: String,
    pub key: PublicKey,
    /// The signature counter stored when the ceremony began.
    pub counter: u32,
    /// The backup-eligibility flag seen at registration.
    pub backup_eligible: bool,
}

/// A credential public key in the form ring verifies with (every byte string base64url).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "alg")]
pub(crate) enum PublicKey {
    /// ECDSA P-256 with SHA-256 (COSE -7); `sec1` is the uncompressed point (65 bytes).
    ES256 { sec1: String },
    /// ECDSA P-384 with SHA-384 (COSE -35); `sec1` is the uncompressed point (97 bytes).
    ES384 { sec1: String },
    /// RSASSA-PKCS1-v1_5 with SHA-256 (COSE -257), modulus of at least 2048 bits.
    RS256 { n: String, e: String },
}

impl PublicKey {
    /// The key of a webauthn-rs passkey, for the algorithms webauthn-rs registers passkeys with
    /// (ES256, ES384, RS256). Anything else is `Err` with the reason.
    pub(crate) fn of_passkey(passkey: &Passkey) -> Result<Self, String> {
        let key = passkey.get_public_key();
        match (&key.type_, &key.key) {
            (COSEAlgorithm::ES256, COSEKeyType::EC_EC2(ec))
                if ec.curve == ECDSACurve::SECP256R1 =>
            {
                Ok(Self::ES256 {
                    sec1: uncompressed_point(&ec.x, &ec.y, 32)?,
                })
            }
            (COSEAlgorithm::ES384, COSEKeyType::EC_EC2(ec))
                if ec.curve == ECDSACurve::SECP384R1 =>
            {
                Ok(Self::ES384 {
                    sec1: uncompressed_point(&ec.x, &ec.y, 48)?,
                })
            }
            (COSEAlgorithm::RS256, COSEKeyType::RSA(rsa)) => {
                let n = strip_leading_zeros(&rsa.n);
                if n.len() < 256 {
                    return Err(format!("RSA key of {} bits (at least 2048)", n.len() * 8));
                }
                Ok(Self::RS256 {
                    n: URL_SAFE_NO_PAD.encode(n),
                    e: URL_SAFE_NO_PAD.encode(strip_leading_zeros(&rsa.e)),
                })
            }
            (alg, _) => Err(format!("unsupported key algorithm {alg:?}")),
        }
    }

    /// Whether `signature` is this key's signature over `message`.
    fn verifies(&self, message: &[u8], signature_bytes: &[u8]) -> Result<bool, PasskeyError> {
        let bytes = |text: &str| {
            B64URL
                .decode(text)
                .map_err(|_| internal("a public key in the state is not base64url"))
        };
        let verified = match self {
            Self::ES256 { sec1 } => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, bytes(sec1)?)
                    .verify(message, signature_bytes)
            }
            Self::ES384 { sec1 } => {
                UnparsedPublicKey::new(&signature::ECDSA_P384_SHA384_ASN1, bytes(sec1)?)
                    .verify(message, signature_bytes)
            }
            Self::RS256 { n, e } => RsaPublicKeyComponents {
                n: bytes(n)?,
                e: bytes(e)?,
            }
            .verify(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                message,
                signature_bytes,
            ),
        };
        Ok(verified.is_ok())
    }
}

fn uncompressed_point(x: &[u8], y: &[u8], size: usize) -> Result<String, String> {
    if x.len() != size || y.len() != size {
        return Err("EC public key coordinates of the wrong size".into());
    }
    let mut point = Vec::with_capacity(1 + 2 * size);
    point.push(0x04);
    point.extend_from_slice(x);
    point.extend_from_slice(y);
    Ok(URL_SAFE_NO_PAD.encode(point))
}

fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let first = bytes
        .iter()
        .position(|byte| *byte != 0)
        .unwrap_or(bytes.len());
    &bytes[first..]
}

/// `PublicKeyCredential` JSON as `navigator.credentials.get()` returns it (the fields we read).
#[derive(Debug, Deserialize)]
struct CredentialJson {
    #[serde(rename = "rawId")]
    raw_id: String,
    response: ResponseJson,
    #[serde(rename = "type")]
    type_: String,
}

#[derive(Debug, Deserialize)]
struct ResponseJson {
    #[serde(rename = "authenticatorData")]
    authenticator_data: String,
    #[serde(rename = "clientDataJSON")]
    client_data_json: String,
    signature: String,
}

/// An assertion credential, decoded but not verified.
#[derive(Debug)]
pub(crate) struct Assertion {
    pub raw_id: Vec<u8>,
    authenticator_data: Vec<u8>,
    client_data_json: Vec<u8>,
    signature: Vec<u8>,
}

impl Assertion {
    /// `Malformed` unless `credential` is a `PublicKeyCredential` of type `public-key` whose
    /// binary members are base64url.
    pub(crate) fn parse(credential: &Value) -> Result<Self, PasskeyError> {
        let json = CredentialJson::deserialize(credential)
            .map_err(|err| PasskeyError::Malformed(err.to_string()))?;
        if json.type_ != "public-key" {
            return Err(PasskeyError::Malformed(
                "the credential type is not public-key".into(),
            ));
        }
        let decode = |field: &str, text: &str| {
            B64URL
                .decode(text)
                .map_err(|_| PasskeyError::Malformed(format!("{field} is not base64url")))
        };
        Ok(Self {
            raw_id: decode("rawId", &json.raw_id)?,
            authenticator_data: decode(
                "response.authenticatorData",
                &json.response.authenticator_data,
            )?,
            client_data_json: decode("response.clientDataJSON", &json.response.client_data_json)?,
            signature: decode("response.signature", &json.response.signature)?,
        })
    }
}

/// `CollectedClientData` (the members we check; others are ignored, as the spec asks).
#[derive(Debug, Deserialize)]
struct ClientData {
    #[serde(rename = "type")]
    type_: String,
    challenge: String,
    origin: String,
    #[serde(rename = "crossOrigin", default)]
    cross_origin: Option<bool>,
    #[serde(rename = "topOrigin", default)]
    top_origin: Option<String>,
}

/// Authenticator data flags (WebAuthn §6.1).
const FLAG_UP: u8 = 0x01;
const FLAG_UV: u8 = 0x04;
const FLAG_BE: u8 = 0x08;
const FLAG_BS: u8 = 0x10;
const FLAG_AT: u8 = 0x40;
const FLAG_ED: u8 = 0x80;
/// rpIdHash (32) + flags (1) + signCount (4).
const AUTH_DATA_MIN: usize = 37;

/// What the relying party expects of every assertion.
#[derive(Debug, Clone)]
pub(crate) struct Expectations {
    pub rp_id: String,
    pub rp_id_hash: [u8; 32],
    /// ASCII serialisations of the allowed origins (`https://host[:port]`).
    pub origins: Vec<String>,
}

impl Expectations {
    pub(crate) fn new(rp_id: &str, origins: Vec<String>) -> Self {
        let mut rp_id_hash = [0u8; 32];
        rp_id_hash.copy_from_slice(digest(&SHA256, rp_id.as_bytes()).as_ref());
        Self {
            rp_id: rp_id.to_owned(),
            rp_id_hash,
            origins,
        }
    }

    /// §7.2 steps 5–21 for `assertion` against `state`; user verification is always required.
    pub(crate) fn verify(
        &self,
        state: &AssertionState,
        assertion: &Assertion,
    ) -> Result<VerifiedAssertion, PasskeyError> {
        if state.v != STATE_VERSION {
            return Err(internal(format!(
                "authentication state version {} is not {STATE_VERSION}",
                state.v
            )));
        }
        if state.rp_id != self.rp_id {
            return Err(internal(format!(
                "the challenge was issued for RP ID {:?}, this relying party is {:?}",
                state.rp_id, self.rp_id
            )));
        }
        // Step 5: the credential is one of allowCredentials.
        let credential_id = URL_SAFE_NO_PAD.encode(&assertion.raw_id);
        let allowed = state
            .credentials
            .iter()
            .find(|allowed| allowed.id == credential_id)
            .ok_or_else(|| refused("credential not allowed"))?;

        // Steps 10–11: C, the client data, parsed from its UTF-8 JSON.
        let client: ClientData = serde_json::from_slice(&assertion.client_data_json)
            .map_err(|_| refused("malformed client data"))?;
        // Step 12.
        if client.type_ != "webauthn.get" {
            return Err(refused("wrong ceremony type"));
        }
        // Step 13: the base64url encoding of our challenge, exactly.
        if client.challenge != state.challenge {
            return Err(refused("wrong challenge"));
        }
        // Step 14: exactly one of the configured origins (browsers send the serialised origin;
        // clients that serialise it as a URL add one `/`); never inside another site's frame.
        let origin = client.origin.strip_suffix('/').unwrap_or(&client.origin);
        if !self.origins.iter().any(|allowed| allowed == origin) {
            return Err(refused("wrong origin"));
        }
        if client.cross_origin == Some(true) || client.top_origin.is_some() {
            return Err(refused("cross-origin assertion"));
        }

        // Step 15 onwards: authenticator data.
        let data = &assertion.authenticator_data;
        if data.len() < AUTH_DATA_MIN {
            return Err(refused("malformed authenticator data"));
        }
        let flags = data[32];
        // Assertions carry no attested credential data; without extensions nothing follows the
        // counter. (Extension CBOR, when present, is covered by the signature and not read.)
        if flags & FLAG_AT != 0
            || (flags & FLAG_ED == 0 && data.len() != AUTH_DATA_MIN)
            || (flags & FLAG_ED != 0 && data.len() == AUTH_DATA_MIN)
        {
            return Err(refused("malformed authenticator data"));
        }
        if data[..32] != self.rp_id_hash {
            return Err(refused("wrong RP ID"));
        }
        if flags & FLAG_UP == 0 {
            return Err(refused("user not present"));
        }
        if flags & FLAG_UV == 0 {
            return Err(refused("user not verified"));
        }
        // §6.1.3: backed up implies backup eligible; eligibility is fixed at registration
        // (webauthn-rs passkeys accept it appearing later, so do we).
        let backup_eligible = flags & FLAG_BE != 0;
        if !backup_eligible && (flags & FLAG_BS != 0 || allowed.backup_eligible) {
            return Err(refused("inconsistent backup flags"));
        }

        // Steps 19–20: the signature over authData ‖ SHA-256(clientDataJSON).
        let mut signed = Vec::with_capacity(data.len() + 32);
        signed.extend_from_slice(data);
        signed.extend_from_slice(digest(&SHA256, &assertion.client_data_json).as_ref());
        if !allowed.key.verifies(&signed, &assertion.signature)? {
            return Err(refused("bad signature"));
        }

        // Step 21: a non-zero counter on either side must increase.
        let counter = u32::from_be_bytes([data[33], data[34], data[35], data[36]]);
        if (counter != 0 || allowed.counter != 0) && counter <= allowed.counter {
            return Err(refused("signature counter did not advance"));
        }
        Ok(VerifiedAssertion {
            credential_id,
            counter,
        })
    }
}

/// The ASCII serialisation of a configured origin, as clients put it in `clientData.origin`.
pub(crate) fn serialised_origin(url: &webauthn_rs::prelude::Url) -> String {
    url.origin().ascii_serialization()
}

/// base64url with or without padding, URL-safe alphabet only.
pub(crate) fn decode_b64url(text: &str) -> Option<Vec<u8>> {
    B64URL.decode(text).ok()
}

fn refused(reason: &str) -> PasskeyError {
    PasskeyError::Refused(reason.to_owned())
}

fn internal(message: impl Into<String>) -> PasskeyError {
    PasskeyError::Internal(message.into())
}

#[cfg(test)]
#[path = "assertion_tests.rs"]
mod tests;
