//! Assertions made here with ring keys, so that each refusal is reached with a valid
//! signature, and the ES384 and RS256 paths the soft passkey cannot exercise are covered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, RsaKeyPair};
use serde_json::json;

use super::*;

const ORIGIN: &str = "http://localhost:8080";
const CHALLENGE: [u8; 32] = [42; 32];
const RSA_DER: &[u8] = include_bytes!("testdata/rsa2048.der");

enum Signer {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

impl Signer {
    fn es256() -> Self {
        Self::ecdsa(&signature::ECDSA_P256_SHA256_ASN1_SIGNING)
    }

    fn es384() -> Self {
        Self::ecdsa(&signature::ECDSA_P384_SHA384_ASN1_SIGNING)
    }

    fn ecdsa(alg: &'static signature::EcdsaSigningAlgorithm) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        Self::Ecdsa(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap())
    }

    fn rs256() -> Self {
        Self::Rsa(RsaKeyPair::from_der(RSA_DER).unwrap())
    }

    fn public_key(&self) -> PublicKey {
        match self {
            Self::Ecdsa(key) => {
                let sec1 = URL_SAFE_NO_PAD.encode(key.public_key().as_ref());
                if key.public_key().as_ref().len() == 65 {
                    PublicKey::ES256 { sec1 }
                } else {
                    PublicKey::ES384 { sec1 }
                }
            }
            Self::Rsa(key) => {
                let components = RsaPublicKeyComponents::<Vec<u8>>::from(key.public());
                PublicKey::RS256 {
                    n: URL_SAFE_NO_PAD.encode(&components.n),
                    e: URL_SAFE_NO_PAD.encode(&components.e),
                }
            }
        }
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match self {
            Self::Ecdsa(key) => key.sign(&rng, message).unwrap().as_ref().to_vec(),
            Self::Rsa(key) => {
                let mut out = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut out)
                    .unwrap();
                out
            }
        }
    }
}

const CRED_ID: [u8; 16] = [7; 16];

fn expectations() -> Expectations {
    Expectations::new("localhost", vec![ORIGIN.to_owned()])
}

fn state(key: PublicKey, counter: u32, backup_eligible: bool) -> AssertionState {
    AssertionState {
        v: STATE_VERSION,
        rp_id: "localhost".into(),
        challenge: URL_SAFE_NO_PAD.encode(CHALLENGE),
        credentials: vec![AllowedCredential {
            id: URL_SAFE_NO_PAD.encode(CRED_ID),
            key,
            counter,
            backup_eligible,
        }],
    }
}

fn auth_data(flags: u8, counter: u32) -> Vec<u8> {
    let mut data = digest(&SHA256, b"localhost").as_ref().to_vec();
    data.push(flags);
    data.extend_from_slice(&counter.to_be_bytes());
    data
}

fn client_data() -> Value {
    json!({
        "type": "webauthn.get",
        "challenge": URL_SAFE_NO_PAD.encode(CHALLENGE),
        "origin": ORIGIN,
        "crossOrigin": false,
    })
}

/// A correctly signed assertion over exactly these bytes.
fn assertion(signer: &Signer, auth_data: Vec<u8>, client_data: &[u8]) -> Assertion {
    let mut signed = auth_data.clone();
    signed.extend_from_slice(digest(&SHA256, client_data).as_ref());
    Assertion {
        raw_id: CRED_ID.to_vec(),
        signature: signer.sign(&signed),
        authenticator_data: auth_data,
        client_data_json: client_data.to_vec(),
    }
}

fn verify(
    state: &AssertionState,
    signer: &Signer,
    auth_data: Vec<u8>,
    client: &Value,
) -> Result<VerifiedAssertion, PasskeyError> {
    let client = serde_json::to_vec(client).unwrap();
    expectations().verify(state, &assertion(signer, auth_data, &client))
}

#[track_caller]
fn refused(result: Result<VerifiedAssertion, PasskeyError>, reason: &str) {
    match result {
        Err(PasskeyError::Refused(got)) => assert_eq!(got, reason),
        other => panic!("expected a refusal ({reason}), got {other:?}"),
    }
}

const UP_UV: u8 = FLAG_UP | FLAG_UV;

#[test]
fn every_registrable_algorithm_verifies() {
    for signer in [Signer::es256(), Signer::es384(), Signer::rs256()] {
        let state = state(signer.public_key(), 4, false);
        let verified = verify(&state, &signer, auth_data(UP_UV, 5), &client_data()).unwrap();
        assert_eq!(verified.counter, 5);
        assert_eq!(verified.credential_id, URL_SAFE_NO_PAD.encode(CRED_ID));
        // Another key of the same kind does not verify it.
        let other = match signer {
            Signer::Rsa(_) => continue,
            Signer::Ecdsa(_) if matches!(state.credentials[0].key, PublicKey::ES256 { .. }) => {
                Signer::es256()
            }
            Signer::Ecdsa(_) => Signer::es384(),
        };
        refused(
            verify(&state, &other, auth_data(UP_UV, 5), &client_data()),
            "bad signature",
        );
    }
}

#[test]
fn validly_signed_refusals() {
    let signer = Signer::es256();
    let key = signer.public_key();
    let with = |change: fn(&mut Value)| {
        let mut data = client_data();
        change(&mut data);
        data
    };
    let fresh = state(key.clone(), 0, false);
    let cases: Vec<(&str, AssertionState, Vec<u8>, Value)> = vec![
        (
            "user not present",
            fresh.clone(),
            auth_data(FLAG_UV, 1),
            client_data(),
        ),
        (
            "user not verified",
            fresh.clone(),
            auth_data(FLAG_UP, 1),
            client_data(),
        ),
        (
            "wrong ceremony type",
            fresh.clone(),
            auth_data(UP_UV, 1),
            with(|d| d["type"] = json!("webauthn.create")),
        ),
        (
            "wrong challenge",
            fresh.clone(),
            auth_data(UP_UV, 1),
            with(|d| d["challenge"] = json!(URL_SAFE_NO_PAD.encode([1u8; 32]))),
        ),
        (
            // The same bytes, padded: not the exact encoding.
            "wrong challenge",
            fresh.clone(),
            auth_data(UP_UV, 1),
            with(|d| d["challenge"] = json!(format!("{}=", URL_SAFE_NO_PAD.encode(CHALLENGE)))),
        ),
        (
            "wrong origin",
            fresh.clone(),
            auth_data(UP_UV, 1),
            with(|d| d["origin"] = json!("http://localhost:8081")),
        ),
        (
            "cross-origin assertion",
            fresh.clone(),
            auth_data(UP_UV, 1),
            with(|d| d["crossOrigin"] = json!(true)),
        ),
        (
            "wrong RP ID",
            fresh.clone(),
            {
                let mut data = auth_data(UP_UV, 1);
                data[..32].copy_from_slice(digest(&SHA256, b"example.com").as_ref());
                data
            },
            client_data(),
        ),
        (
            "inconsistent backup flags",
            state(key.clone(), 0, true),
            auth_data(UP_UV, 1),
            client_data(),
        ),
        (
            "inconsistent backup flags",
            fresh.clone(),
            auth_data(UP_UV | FLAG_BS, 1),
            client_data(),
        ),
        (
            "signature counter did not advance",
            state(key.clone(), 9, false),
            auth_data(UP_UV, 9),
            client_data(),
        ),
        (
            "signature counter did not advance",
            state(key.clone(), 9, false),
            auth_data(UP_UV, 0),
            client_data(),
        ),
        (
            "signature counter did not advance",
            state(key.clone(), 9, false),
            auth_data(UP_UV, 3),
            client_data(),
        ),
        (
            "malformed authenticator data",
            fresh.clone(),
            auth_data(UP_UV | FLAG_ED, 1),
            client_data(),
        ),
    ];
    for (reason, state, data, client) in cases {
        refused(verify(&state, &signer, data, &client), reason);
    }
}

#[test]
fn what_is_accepted() {
    let signer = Signer::es256();
    let key = signer.public_key();
    // A counter that stays 0 on both sides (synced passkeys).
    let zero = verify(
        &state(key.clone(), 0, false),
        &signer,
        auth_data(UP_UV, 0),
        &client_data(),
    );
    assert_eq!(zero.unwrap().counter, 0);
    // Backup eligibility appearing later, backed up, with extensions after the counter.
    let mut data = auth_data(UP_UV | FLAG_BE | FLAG_BS | FLAG_ED, 2);
    data.extend_from_slice(&[0xa0]);
    verify(&state(key.clone(), 1, false), &signer, data, &client_data()).unwrap();
    // Unknown client data members are ignored; no crossOrigin member is same-origin.
    let mut client = client_data();
    client["other"] = json!("x");
    client.as_object_mut().unwrap().remove("crossOrigin");
    verify(
        &state(key, 1, true),
        &signer,
        auth_data(UP_UV | FLAG_BE, 2),
        &client,
    )
    .unwrap();
}
