//! Every ceremony of the adapter against the software passkey.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_enduser::ports::{
    CeremonyStart, NewPasskey, PasskeyCeremony, PasskeyError, StoredPasskey, VerifiedAssertion,
};
use idconsent_passkey_soft::{SoftPasskey, tamper_signature};
use idconsent_webauthn::WebauthnCeremony;
use serde_json::{Value, json};

const ORIGIN: &str = "http://localhost:8080";
const CHALLENGE: [u8; 32] = *b"a hash committing to the context";

fn ceremony() -> WebauthnCeremony {
    WebauthnCeremony::from_origin_list("localhost", ORIGIN).unwrap()
}

fn user_handle() -> String {
    hex::encode([7u8; 16])
}

/// A passkey registered on `rp` through `origin`.
fn enrolled(rp: &WebauthnCeremony, origin: &str) -> (SoftPasskey, NewPasskey) {
    let mut device = SoftPasskey::new().unwrap();
    let start = rp
        .start_registration(&user_handle(), "+15550100", "Ada", &[])
        .unwrap();
    let credential = device.register(origin, &start.options).unwrap();
    let passkey = rp.finish_registration(&start.state, &credential).unwrap();
    (device, passkey)
}

/// `start_authentication` for one stored passkey with its counter.
fn start(rp: &WebauthnCeremony, passkey: &str, counter: u32, challenge: [u8; 32]) -> CeremonyStart {
    rp.start_authentication(&[StoredPasskey { passkey, counter }], challenge)
        .unwrap()
}

/// An assertion of `device` verified against `passkey` with the stored `counter`.
fn login(
    rp: &WebauthnCeremony,
    device: &mut SoftPasskey,
    passkey: &str,
    counter: u32,
) -> Result<VerifiedAssertion, PasskeyError> {
    let start = start(rp, passkey, counter, CHALLENGE);
    let credential = device.authenticate(ORIGIN, &start.options).unwrap();
    rp.finish_authentication(&start.state, &credential)
}

/// A genuine assertion for `passkey`, with the state to finish it against.
fn signed(
    rp: &WebauthnCeremony,
    device: &mut SoftPasskey,
    passkey: &NewPasskey,
) -> (String, Value) {
    let start = start(rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let credential = device.authenticate(ORIGIN, &start.options).unwrap();
    (start.state, credential)
}

/// The credential with `response.<field>` decoded, changed by `change` and encoded again (the
/// signature is left as it was).
fn edited(credential: &Value, field: &str, change: impl FnOnce(&mut Vec<u8>)) -> Value {
    let mut credential = credential.clone();
    let slot = &mut credential["response"][field];
    let mut bytes = URL_SAFE_NO_PAD.decode(slot.as_str().unwrap()).unwrap();
    change(&mut bytes);
    *slot = json!(URL_SAFE_NO_PAD.encode(bytes));
    credential
}

fn client_data(credential: &Value) -> Value {
    let bytes = URL_SAFE_NO_PAD
        .decode(credential["response"]["clientDataJSON"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[track_caller]
fn assert_refused(result: Result<VerifiedAssertion, PasskeyError>, reason: &str) {
    match result {
        Err(PasskeyError::Refused(got)) => assert!(got.contains(reason), "refused for {got:?}"),
        other => panic!("expected a refusal ({reason}), got {other:?}"),
    }
}

#[test]
fn registers_and_authenticates() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let raw_id = URL_SAFE_NO_PAD.decode(&passkey.credential_id).unwrap();
    assert!(!raw_id.is_empty());
    assert!(!passkey.credential_id.contains('='));
    let stored: Value = serde_json::from_str(&passkey.passkey).unwrap();
    assert_eq!(stored["cred"]["user_verified"], true);
    assert_eq!(stored["cred"]["counter"], passkey.counter);

    let start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let options = &start.options["publicKey"];
    assert_eq!(options["userVerification"], "required");
    assert_eq!(options["rpId"], "localhost");
    assert_eq!(options["allowCredentials"][0]["id"], passkey.credential_id);

    let credential = device.authenticate(ORIGIN, &start.options).unwrap();
    assert_eq!(
        rp.asserted_credential_id(&credential).unwrap(),
        passkey.credential_id
    );
    let verified = rp.finish_authentication(&start.state, &credential).unwrap();
    assert_eq!(verified.credential_id, passkey.credential_id);
    // The soft token counts signatures, so the counter moves on.
    assert!(verified.counter > passkey.counter);

    // With the new counter stored, the passkey authenticates again.
    let again = login(&rp, &mut device, &passkey.passkey, verified.counter).unwrap();
    assert_eq!(again.credential_id, passkey.credential_id);
    assert!(again.counter > verified.counter);
}

#[test]
fn the_challenge_is_exactly_the_given_bytes() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let encoded = URL_SAFE_NO_PAD.encode(CHALLENGE);
    assert_eq!(start.options["publicKey"]["challenge"], encoded.as_str());
    let state: Value = serde_json::from_str(&start.state).unwrap();
    assert_eq!(state["challenge"], encoded.as_str());
    assert_eq!(
        state["credentials"][0]["id"],
        passkey.credential_id.as_str()
    );
    assert_eq!(state["credentials"][0]["key"]["alg"], "ES256");

    let credential = device.authenticate(ORIGIN, &start.options).unwrap();
    let client_data = client_data(&credential);
    assert_eq!(client_data["type"], "webauthn.get");
    let signed = URL_SAFE_NO_PAD
        .decode(client_data["challenge"].as_str().unwrap())
        .unwrap();
    assert_eq!(signed, CHALLENGE);
    rp.finish_authentication(&start.state, &credential).unwrap();
}

#[test]
fn an_assertion_over_another_challenge_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let first = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let second = start(&rp, &passkey.passkey, passkey.counter, [9; 32]);
    let credential = device.authenticate(ORIGIN, &second.options).unwrap();
    assert_refused(
        rp.finish_authentication(&first.state, &credential),
        "wrong challenge",
    );
}

#[test]
fn a_missing_uv_flag_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let credential = device
        .authenticate_without_uv(ORIGIN, &start.options)
        .unwrap();
    // The authenticator data really lacks UV: flags byte after the 32-byte RP ID hash.
    let auth_data = URL_SAFE_NO_PAD
        .decode(
            credential["response"]["authenticatorData"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    assert_eq!(auth_data[32] & 0b0000_0101, 0b0000_0001, "UP set, UV clear");
    assert_refused(
        rp.finish_authentication(&start.state, &credential),
        "user not verified",
    );
}

#[test]
fn a_counter_going_backwards_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let mut clone = device.snapshot().unwrap();
    let first = login(&rp, &mut device, &passkey.passkey, passkey.counter).unwrap();
    let second = login(&rp, &mut device, &passkey.passkey, first.counter).unwrap();
    // The server has the second counter; the clone signs with the first.
    assert_refused(
        login(&rp, &mut clone, &passkey.passkey, second.counter),
        "counter did not advance",
    );
}

#[test]
fn a_repeated_counter_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let mut clone = device.snapshot().unwrap();
    let stored = login(&rp, &mut device, &passkey.passkey, passkey.counter)
        .unwrap()
        .counter;
    assert_refused(
        login(&rp, &mut clone, &passkey.passkey, stored),
        "counter did not advance",
    );
}

#[test]
fn a_tampered_signature_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let mut credential = device.authenticate(ORIGIN, &start.options).unwrap();
    tamper_signature(&mut credential).unwrap();
    assert_refused(
        rp.finish_authentication(&start.state, &credential),
        "bad signature",
    );
}

#[test]
fn a_wrong_origin_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    // Within the RP ID (the client accepts it), but not a configured origin.
    let credential = device
        .authenticate("http://localhost:9999", &start.options)
        .unwrap();
    assert_refused(
        rp.finish_authentication(&start.state, &credential),
        "wrong origin",
    );
}

#[test]
fn a_wrong_rp_id_is_refused() {
    // Both origins are allowed; the RP ID is the parent domain.
    let rp = WebauthnCeremony::new(
        "example.com",
        &["https://example.com", "https://login.example.com"],
    )
    .unwrap();
    let origin = "https://login.example.com";
    let (mut device, passkey) = enrolled(&rp, origin);
    let mut start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    // The authenticator signs for another RP ID that the client accepts at this origin.
    start.options["publicKey"]["rpId"] = json!("login.example.com");
    let credential = device.authenticate(origin, &start.options).unwrap();
    assert_refused(
        rp.finish_authentication(&start.state, &credential),
        "wrong RP ID",
    );
}

#[test]
fn a_credential_outside_the_allowed_set_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let (_other_device, other) = enrolled(&rp, ORIGIN);
    // The challenge allows only the other passkey; the device answers with its own.
    let allowed_other = start(&rp, &other.passkey, other.counter, CHALLENGE);
    let own = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    let credential = device.authenticate(ORIGIN, &own.options).unwrap();
    assert_refused(
        rp.finish_authentication(&allowed_other.state, &credential),
        "credential not allowed",
    );
}

#[test]
fn registration_refuses_a_foreign_origin_or_missing_uv() {
    let rp = ceremony();
    let (_device, passkey) = enrolled(&rp, ORIGIN);

    let start = rp
        .start_registration(&user_handle(), "+15550100", "Ada", &[])
        .unwrap();
    let credential = SoftPasskey::new()
        .unwrap()
        .register("http://localhost:9999", &start.options)
        .unwrap();
    assert!(matches!(
        rp.finish_registration(&start.state, &credential),
        Err(PasskeyError::Refused(reason)) if reason == "wrong origin"
    ));

    // An authenticator that skipped user verification (the client downgraded the request).
    let mut start = rp
        .start_registration(&user_handle(), "+15550100", "Ada", &[])
        .unwrap();
    start.options["publicKey"]["authenticatorSelection"]["userVerification"] = json!("discouraged");
    let credential = SoftPasskey::new()
        .unwrap()
        .register(ORIGIN, &start.options)
        .unwrap();
    assert!(matches!(
        rp.finish_registration(&start.state, &credential),
        Err(PasskeyError::Refused(reason)) if reason == "user not verified"
    ));

    // Existing credentials are excluded in the options the authenticator sees.
    let start = rp
        .start_registration(
            &user_handle(),
            "+15550100",
            "Ada",
            std::slice::from_ref(&passkey.credential_id),
        )
        .unwrap();
    assert_eq!(
        start.options["publicKey"]["excludeCredentials"][0]["id"],
        passkey.credential_id.as_str()
    );
}

#[test]
fn malformed_credentials_are_malformed() {
    let rp = ceremony();
    let (_device, passkey) = enrolled(&rp, ORIGIN);
    let start = start(&rp, &passkey.passkey, passkey.counter, CHALLENGE);
    for credential in [
        json!({}),
        json!("text"),
        json!({ "id": "x", "rawId": "%%%" }),
    ] {
        assert!(matches!(
            rp.finish_authentication(&start.state, &credential),
            Err(PasskeyError::Malformed(_))
        ));
        assert!(matches!(
            rp.asserted_credential_id(&credential),
            Err(PasskeyError::Malformed(_))
        ));
    }
    let registration = rp
        .start_registration(&user_handle(), "+15550100", "Ada", &[])
        .unwrap();
    assert!(matches!(
        rp.finish_registration(&registration.state, &json!({ "id": 1 })),
        Err(PasskeyError::Malformed(_))
    ));
    assert!(matches!(
        rp.finish_authentication("not state", &json!({})),
        Err(PasskeyError::Internal(_))
    ));
}

/// Each edit below is refused for its own reason, before the signature (which no longer matches
/// either) is even looked at.
#[test]
fn edited_assertions_are_refused_for_what_was_edited() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let (state, genuine) = signed(&rp, &mut device, &passkey);
    let client_json = |credential: &Value, change: fn(&mut Value)| {
        edited(credential, "clientDataJSON", |bytes| {
            let mut data: Value = serde_json::from_slice(bytes).unwrap();
            change(&mut data);
            *bytes = serde_json::to_vec(&data).unwrap();
        })
    };
    let cases: Vec<(&str, Value)> = vec![
        (
            "wrong ceremony type",
            client_json(&genuine, |data| data["type"] = json!("webauthn.create")),
        ),
        (
            "wrong challenge",
            client_json(&genuine, |data| {
                data["challenge"] = json!(URL_SAFE_NO_PAD.encode([9u8; 32]))
            }),
        ),
        (
            "wrong origin",
            client_json(&genuine, |data| {
                data["origin"] = json!("http://localhost:8080/login")
            }),
        ),
        (
            "wrong origin",
            client_json(&genuine, |data| {
                data["origin"] = json!("https://localhost:8080")
            }),
        ),
        (
            "wrong origin",
            client_json(&genuine, |data| data["origin"] = json!("http://localhost")),
        ),
        (
            "cross-origin",
            client_json(&genuine, |data| data["crossOrigin"] = json!(true)),
        ),
        (
            "cross-origin",
            client_json(&genuine, |data| {
                data["topOrigin"] = json!("https://evil.example")
            }),
        ),
        (
            "malformed client data",
            edited(&genuine, "clientDataJSON", |bytes| {
                *bytes = b"{\"type\":\"webauthn.get\"".to_vec()
            }),
        ),
        (
            "malformed client data",
            edited(&genuine, "clientDataJSON", |bytes| bytes.push(0xff)),
        ),
        (
            "wrong RP ID",
            edited(&genuine, "authenticatorData", |bytes| bytes[0] ^= 1),
        ),
        (
            "user not present",
            edited(&genuine, "authenticatorData", |bytes| bytes[32] &= !0x01),
        ),
        (
            "user not verified",
            edited(&genuine, "authenticatorData", |bytes| bytes[32] &= !0x04),
        ),
        (
            "inconsistent backup flags",
            edited(&genuine, "authenticatorData", |bytes| {
                bytes[32] = (bytes[32] | 0x10) & !0x08
            }),
        ),
        (
            "malformed authenticator data",
            edited(&genuine, "authenticatorData", |bytes| bytes.truncate(36)),
        ),
        (
            "malformed authenticator data",
            edited(&genuine, "authenticatorData", |bytes| bytes.truncate(10)),
        ),
        (
            // Bytes after the counter without the extensions flag.
            "malformed authenticator data",
            edited(&genuine, "authenticatorData", |bytes| bytes.push(0xa0)),
        ),
        (
            // Attested credential data has no place in an assertion.
            "malformed authenticator data",
            edited(&genuine, "authenticatorData", |bytes| bytes[32] |= 0x40),
        ),
        (
            // The counter is signed: raising it breaks the signature.
            "bad signature",
            edited(&genuine, "authenticatorData", |bytes| bytes[36] ^= 0x80),
        ),
        (
            // So is every byte of the client data, checked members or not.
            "bad signature",
            client_json(&genuine, |data| data["other"] = json!("extra member")),
        ),
        ("bad signature", {
            let mut credential = genuine.clone();
            credential["response"]["signature"] = json!(URL_SAFE_NO_PAD.encode([0u8; 8]));
            credential
        }),
    ];
    for (reason, credential) in cases {
        assert_refused(rp.finish_authentication(&state, &credential), reason);
    }
    // The unedited assertion still verifies.
    rp.finish_authentication(&state, &genuine).unwrap();
}

#[test]
fn an_unknown_credential_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let (state, mut credential) = signed(&rp, &mut device, &passkey);
    let unknown = URL_SAFE_NO_PAD.encode([0x5a; 16]);
    credential["rawId"] = json!(unknown);
    credential["id"] = json!(unknown);
    assert_eq!(rp.asserted_credential_id(&credential).unwrap(), unknown);
    assert_refused(
        rp.finish_authentication(&state, &credential),
        "credential not allowed",
    );
}

#[test]
fn a_stored_counter_ahead_of_the_authenticator_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    // Counters that stay 0 are covered by the unit tests (the soft token always counts): here a
    // stored counter ahead of the genuine authenticator's next value refuses it.
    let verified = login(&rp, &mut device, &passkey.passkey, passkey.counter).unwrap();
    assert_refused(
        login(&rp, &mut device, &passkey.passkey, u32::MAX),
        "counter did not advance",
    );
    assert!(verified.counter > 0);
}

#[test]
fn a_state_of_another_relying_party_or_layout_is_internal() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let (state, credential) = signed(&rp, &mut device, &passkey);
    let other = WebauthnCeremony::new("example.com", &["https://example.com"]).unwrap();
    assert!(matches!(
        other.finish_authentication(&state, &credential),
        Err(PasskeyError::Internal(_))
    ));
    let mut old: Value = serde_json::from_str(&state).unwrap();
    old["v"] = json!(0);
    assert!(matches!(
        rp.finish_authentication(&old.to_string(), &credential),
        Err(PasskeyError::Internal(_))
    ));
}

#[test]
fn a_credential_of_another_type_is_malformed() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let (state, mut credential) = signed(&rp, &mut device, &passkey);
    credential["type"] = json!("password");
    assert!(matches!(
        rp.finish_authentication(&state, &credential),
        Err(PasskeyError::Malformed(_))
    ));
    let mut credential = signed(&rp, &mut device, &passkey).1;
    credential["response"]["authenticatorData"] = json!("not base64!");
    assert!(matches!(
        rp.finish_authentication(&state, &credential),
        Err(PasskeyError::Malformed(_))
    ));
}
