//! Every ceremony of the adapter against the software passkey.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_enduser::ports::{NewPasskey, PasskeyCeremony, PasskeyError, VerifiedAssertion};
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

fn login(
    rp: &WebauthnCeremony,
    device: &mut SoftPasskey,
    passkey: &str,
) -> Result<VerifiedAssertion, PasskeyError> {
    let start = rp
        .start_authentication(&[passkey.to_owned()], CHALLENGE)
        .unwrap();
    let credential = device.authenticate(ORIGIN, &start.options).unwrap();
    rp.finish_authentication(&start.state, &credential)
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

    let start = rp
        .start_authentication(std::slice::from_ref(&passkey.passkey), CHALLENGE)
        .unwrap();
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
    // The soft token counts signatures, so the stored counter moves on.
    let updated = verified.updated_passkey.expect("counter advanced");
    let updated_json: Value = serde_json::from_str(&updated).unwrap();
    assert_eq!(updated_json["cred"]["counter"], 1);

    // The updated passkey authenticates again (counter 2 > 1).
    let again = login(&rp, &mut device, &updated).unwrap();
    assert_eq!(again.credential_id, passkey.credential_id);
}

#[test]
fn the_challenge_is_exactly_the_given_bytes() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let start = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
    let encoded = URL_SAFE_NO_PAD.encode(CHALLENGE);
    assert_eq!(start.options["publicKey"]["challenge"], encoded.as_str());
    let state: Value = serde_json::from_str(&start.state).unwrap();
    assert_eq!(state["ast"]["challenge"], encoded.as_str());

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
    let first = rp
        .start_authentication(std::slice::from_ref(&passkey.passkey), CHALLENGE)
        .unwrap();
    let second = rp
        .start_authentication(&[passkey.passkey], [9; 32])
        .unwrap();
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
    let start = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
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
    let first = login(&rp, &mut device, &passkey.passkey).unwrap();
    let second = login(&rp, &mut device, &first.updated_passkey.unwrap()).unwrap();
    // The server has counter 2; the clone signs with counter 1.
    assert_refused(
        login(&rp, &mut clone, &second.updated_passkey.unwrap()),
        "counter did not advance",
    );
}

#[test]
fn a_repeated_counter_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let mut clone = device.snapshot().unwrap();
    let stored = login(&rp, &mut device, &passkey.passkey)
        .unwrap()
        .updated_passkey
        .unwrap();
    assert_refused(login(&rp, &mut clone, &stored), "counter did not advance");
}

#[test]
fn a_tampered_signature_is_refused() {
    let rp = ceremony();
    let (mut device, passkey) = enrolled(&rp, ORIGIN);
    let start = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
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
    let start = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
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
    let mut start = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
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
    let allowed_other = rp
        .start_authentication(&[other.passkey], CHALLENGE)
        .unwrap();
    let own = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
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
    let start = rp
        .start_authentication(&[passkey.passkey], CHALLENGE)
        .unwrap();
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
