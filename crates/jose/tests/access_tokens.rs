//! OAuth access tokens: the `TokenSigner` contract on ES256, the key ring on disk, and tokens
//! checked against the JWKS by an independent ES256 implementation (RustCrypto `p256`; josekit
//! signs with OpenSSL).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_jose::{Es256KeyRing, Es256TokenSigner, KeyRingError};
use idconsent_kernel::{ManualClock, Timestamp};
use idconsent_oauth::ports::{AccessTokenClaims, TokenError, TokenSigner};
use josekit::jws::{ES256, HS256, JwsSigner};
use serde_json::{Value, json};

const ISSUER: &str = "https://id.example.test";
const T0: i64 = 1_763_719_200_000; // 2025-11-21T10:00:00.000Z
const HOUR: Duration = Duration::from_secs(3600);

fn at(millis: i64) -> Timestamp {
    Timestamp::from_millis(millis)
}

fn claims(issued_at: Timestamp) -> AccessTokenClaims {
    AccessTokenClaims {
        issuer: ISSUER.into(),
        audience: "app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C".into(),
        subject: "+15551234567".into(),
        scopes: vec!["openid".into(), "phone".into(), "profile".into()],
        token_id: "at_01JDKX9Q6N8V3T5R7W2Y4Z6B8D".into(),
        issued_at,
        expires_at: issued_at.plus(HOUR),
    }
}

fn setup(dir: &Path) -> (Es256TokenSigner, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(at(T0)));
    let ring = Es256KeyRing::open_or_create(dir, at(T0)).unwrap();
    (Es256TokenSigner::new(ring, ISSUER, clock.clone()), clock)
}

fn part(token: &str, index: usize) -> Value {
    let part = token.split('.').nth(index).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

fn encode(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap())
}

fn kids(jwks: &Value) -> Vec<String> {
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["kid"].as_str().unwrap().to_owned())
        .collect()
}

/// Signs `header.payload` with `signer` (josekit, outside our signer) into a compact JWS.
fn forge(header: &Value, payload: &Value, signer: &dyn JwsSigner) -> String {
    let input = format!("{}.{}", encode(header), encode(payload));
    let signature = signer.sign(input.as_bytes()).unwrap();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// Verifies `token` against a JWKS document the way a relying party would, with RustCrypto's
/// `p256` instead of josekit/OpenSSL, and returns its payload.
fn verify_independently(jwks_json: &str, token: &str) -> Result<Value, String> {
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::{Signature, VerifyingKey};

    let jwks: Value = serde_json::from_str(jwks_json).map_err(|e| e.to_string())?;
    let mut parts = token.split('.');
    let (Some(header_b64), Some(payload_b64), Some(signature_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a compact JWS".into());
    };
    let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).map_err(|e| e.to_string());
    let header: Value = serde_json::from_slice(&decode(header_b64)?).map_err(|e| e.to_string())?;
    if header["alg"] != "ES256" || header["typ"] != "at+jwt" {
        return Err(format!("unexpected header {header}"));
    }
    let jwk = jwks["keys"]
        .as_array()
        .ok_or("no keys")?
        .iter()
        .find(|key| key["kid"] == header["kid"])
        .ok_or("kid not in the JWKS")?;
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" || jwk["alg"] != "ES256" || jwk["use"] != "sig" {
        return Err(format!("unexpected JWK {jwk}"));
    }
    let coordinate = |name: &str| decode(jwk[name].as_str().unwrap_or_default());
    let mut sec1 = vec![0x04];
    sec1.extend(coordinate("x")?);
    sec1.extend(coordinate("y")?);
    let key = VerifyingKey::from_sec1_bytes(&sec1).map_err(|e| e.to_string())?;
    let signature = Signature::from_slice(&decode(signature_b64)?).map_err(|e| e.to_string())?;
    let signing_input = &token[..header_b64.len() + 1 + payload_b64.len()];
    key.verify(signing_input.as_bytes(), &signature)
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&decode(payload_b64)?).map_err(|e| e.to_string())
}

#[test]
fn tokens_round_trip_with_an_rfc_9068_header_and_payload() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let kid = signer.ring().active_kid().to_owned();
    let token = signer.sign(&claims(at(T0))).unwrap();

    assert_eq!(token.split('.').count(), 3);
    assert_eq!(
        part(&token, 0),
        json!({"alg": "ES256", "typ": "at+jwt", "kid": kid})
    );
    assert_eq!(
        part(&token, 1),
        json!({
            "iss": ISSUER,
            "sub": "+15551234567",
            "aud": "app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C",
            "client_id": "app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C",
            "scope": "openid phone profile",
            "jti": "at_01JDKX9Q6N8V3T5R7W2Y4Z6B8D",
            "iat": T0 / 1000,
            "exp": T0 / 1000 + 3600,
        })
    );
    assert_eq!(
        URL_SAFE_NO_PAD
            .decode(token.split('.').nth(2).unwrap())
            .unwrap()
            .len(),
        64
    );
    assert_eq!(signer.verify(&token, at(T0 + 1)).unwrap(), claims(at(T0)));

    // Sub-second instants and no scopes come back exactly too.
    let mut odd = claims(at(T0 + 123));
    odd.expires_at = at(T0 + 3_599_999);
    odd.scopes.clear();
    let token = signer.sign(&odd).unwrap();
    assert_eq!(part(&token, 1)["exp"], (T0 + 3_599_999) / 1000);
    assert_eq!(part(&token, 1)["exp_ms"], T0 + 3_599_999);
    assert_eq!(signer.verify(&token, at(T0 + 124)).unwrap(), odd);
}

#[test]
fn tokens_expire_at_exp() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let token = signer.sign(&claims(at(T0))).unwrap();
    let exp = T0 + 3_600_000;
    assert!(signer.verify(&token, at(exp - 1)).is_ok());
    assert!(matches!(
        signer.verify(&token, at(exp)),
        Err(TokenError::Invalid)
    ));
    assert!(matches!(
        signer.verify(&token, at(exp + 86_400_000)),
        Err(TokenError::Invalid)
    ));
}

#[test]
fn altered_and_malformed_tokens_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let token = signer.sign(&claims(at(T0))).unwrap();
    let now = at(T0 + 1);
    let parts: Vec<&str> = token.split('.').collect();

    let mut payload = part(&token, 1);
    payload["sub"] = "+15550000000".into();
    let altered_payload = format!("{}.{}.{}", parts[0], encode(&payload), parts[2]);
    let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    signature[10] ^= 1;
    let altered_signature = format!(
        "{}.{}.{}",
        parts[0],
        parts[1],
        URL_SAFE_NO_PAD.encode(&signature)
    );
    let truncated = format!("{}.{}", parts[0], parts[1]);
    for bad in [
        altered_payload.as_str(),
        altered_signature.as_str(),
        truncated.as_str(),
        "",
        "garbage",
        "a.b.c",
        &format!("{token}.extra"),
    ] {
        assert!(
            matches!(signer.verify(bad, now), Err(TokenError::Invalid)),
            "{bad}"
        );
    }

    // Same keys, another issuer: not ours.
    let other_issuer = Es256TokenSigner::new(
        Es256KeyRing::open(dir.path()).unwrap(),
        "https://other.example.test",
        Arc::new(ManualClock::new(now)),
    );
    assert!(matches!(
        other_issuer.verify(&token, now),
        Err(TokenError::Invalid)
    ));
}

#[test]
fn tokens_of_unknown_keys_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let (other, _) = setup(other_dir.path());
    let now = at(T0 + 1);

    let foreign = other.sign(&claims(at(T0))).unwrap();
    assert!(matches!(
        signer.verify(&foreign, now),
        Err(TokenError::Invalid)
    ));

    // A foreign key's signature under our kid, and our signature under an unknown kid.
    let kid = signer.ring().active_kid().to_owned();
    let other_kid = other.ring().active_kid().to_owned();
    let other_pem = std::fs::read(other_dir.path().join(format!("{other_kid}.pem"))).unwrap();
    let foreign_signer = ES256.signer_from_pem(&other_pem).unwrap();
    let payload = part(&foreign, 1);
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    assert!(matches!(
        signer.verify(&forge(&header, &payload, &foreign_signer), now),
        Err(TokenError::Invalid)
    ));
    let ours = signer.sign(&claims(at(T0))).unwrap();
    let renamed = format!(
        "{}.{}",
        encode(&json!({"alg": "ES256", "typ": "at+jwt", "kid": "nope"})),
        ours.split_once('.').unwrap().1
    );
    assert!(matches!(
        signer.verify(&renamed, now),
        Err(TokenError::Invalid)
    ));
    let no_kid = format!(
        "{}.{}",
        encode(&json!({"alg": "ES256", "typ": "at+jwt"})),
        ours.split_once('.').unwrap().1
    );
    assert!(matches!(
        signer.verify(&no_kid, now),
        Err(TokenError::Invalid)
    ));
}

#[test]
fn unsigned_hmac_confused_and_mistyped_tokens_are_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let kid = signer.ring().active_kid().to_owned();
    let now = at(T0 + 1);
    let payload = part(&signer.sign(&claims(at(T0))).unwrap(), 1);

    // alg: none, with and without an (empty) signature part.
    for alg in ["none", "None", "NONE"] {
        let header = json!({"alg": alg, "typ": "at+jwt", "kid": kid});
        let unsigned = format!("{}.{}.", encode(&header), encode(&payload));
        assert!(matches!(
            signer.verify(&unsigned, now),
            Err(TokenError::Invalid)
        ));
    }

    // HS256 keyed with the public key, in every form a confused verifier might use.
    let jwks = signer.jwks();
    let jwk = jwks["keys"][0].clone();
    let pem = std::fs::read(dir.path().join(format!("{kid}.pem"))).unwrap();
    let public_pem = ES256.key_pair_from_pem(&pem).unwrap();
    let public_pem = josekit::jwk::KeyPair::to_pem_public_key(&public_pem);
    let x = URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap();
    for secret in [
        public_pem.clone(),
        serde_json::to_vec(&jwk).unwrap(),
        [vec![4], x].concat(),
    ] {
        let hmac = HS256.signer_from_bytes(&secret).unwrap();
        let header = json!({"alg": "HS256", "typ": "at+jwt", "kid": kid});
        assert!(matches!(
            signer.verify(&forge(&header, &payload, &hmac), now),
            Err(TokenError::Invalid)
        ));
    }

    // A genuine ES256 signature by our key on a token that is not an access token.
    let key = ES256.signer_from_pem(&pem).unwrap();
    let good = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    assert!(signer.verify(&forge(&good, &payload, &key), now).is_ok());
    for header in [
        json!({"alg": "ES256", "typ": "JWT", "kid": kid}),
        json!({"alg": "ES256", "kid": kid}),
        json!({"alg": "ES256", "typ": "at+jwt", "kid": kid, "crit": ["exp"], "exp": 1}),
        json!({"alg": "ES384", "typ": "at+jwt", "kid": kid}),
    ] {
        assert!(
            matches!(
                signer.verify(&forge(&header, &payload, &key), now),
                Err(TokenError::Invalid)
            ),
            "{header}"
        );
    }
    // RFC 9068 also allows the full media type.
    let media_type = json!({"alg": "ES256", "typ": "application/at+jwt", "kid": kid});
    assert!(
        signer
            .verify(&forge(&media_type, &payload, &key), now)
            .is_ok()
    );
    // Payloads that are not ours: a missing claim, or client_id that is not the audience.
    let mut missing = payload.clone();
    missing.as_object_mut().unwrap().remove("jti");
    let mut mismatched = payload.clone();
    mismatched["client_id"] = "app_other".into();
    for payload in [missing, mismatched] {
        assert!(matches!(
            signer.verify(&forge(&good, &payload, &key), now),
            Err(TokenError::Invalid)
        ));
    }
}

#[test]
fn signing_refuses_claims_that_would_not_round_trip_or_outlive_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let mut other_issuer = claims(at(T0));
    other_issuer.issuer = "https://other.example.test".into();
    let mut spaced = claims(at(T0));
    spaced.scopes.push("two words".into());
    let mut empty = claims(at(T0));
    empty.scopes.push(String::new());
    let mut long_lived = claims(at(T0));
    long_lived.expires_at = at(T0 + 3_600_001);
    for bad in [other_issuer, spaced, empty, long_lived] {
        assert!(
            matches!(signer.sign(&bad), Err(TokenError::Sign(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn rotation_keeps_old_keys_published_until_their_tokens_expire() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, clock) = setup(dir.path());
    let old_kid = signer.ring().active_kid().to_owned();
    let old_pem = std::fs::read(dir.path().join(format!("{old_kid}.pem"))).unwrap();
    let before = signer.sign(&claims(at(T0))).unwrap();
    // A token by the old key that outlives its publication, made outside the signer, shows the
    // key itself stops being accepted (our signer never issues such a token).
    let mut forged_payload = part(&before, 1);
    forged_payload["exp"] = (T0 / 1000 + 10 * 3600).into();
    let forged = forge(
        &part(&before, 0),
        &forged_payload,
        &ES256.signer_from_pem(&old_pem).unwrap(),
    );

    let rotated_at = T0 + 600_000;
    clock.set(at(rotated_at));
    let new_kid = signer.rotate(at(rotated_at)).unwrap();
    assert_ne!(new_kid, old_kid);
    assert_eq!(signer.ring().active_kid(), new_kid);
    let after = signer.sign(&claims(at(rotated_at))).unwrap();
    assert_eq!(part(&after, 0)["kid"], new_kid.as_str());
    assert_eq!(kids(&signer.jwks()), [old_kid.clone(), new_kid.clone()]);
    let entries: Vec<_> = signer.ring().keys().cloned().collect();
    assert_eq!(entries[0].retired_at, Some(at(rotated_at)));
    assert_eq!(entries[1].retired_at, None);

    // Just before retired_at + lifetime the old key still verifies and is published.
    let last_moment = rotated_at + 3_600_000 - 1;
    clock.set(at(last_moment));
    assert!(signer.verify(&forged, at(last_moment)).is_ok());
    assert_eq!(kids(&signer.jwks()), [old_kid.clone(), new_kid.clone()]);
    assert!(signer.verify(&before, at(T0 + 3_599_999)).is_ok());

    // From then on it is gone from the JWKS, its tokens fail, and pruning deletes it.
    let gone = rotated_at + 3_600_000;
    clock.set(at(gone));
    assert_eq!(kids(&signer.jwks()), [new_kid.as_str()]);
    assert!(matches!(
        signer.verify(&forged, at(gone)),
        Err(TokenError::Invalid)
    ));
    assert!(signer.verify(&after, at(gone - 1)).is_ok());
    assert!(dir.path().join(format!("{old_kid}.pem")).exists());
    let reopened = Es256KeyRing::open_or_create(dir.path(), at(gone)).unwrap();
    assert_eq!(
        reopened
            .keys()
            .map(|key| key.kid.as_str())
            .collect::<Vec<_>>(),
        [new_kid.as_str()]
    );
    assert!(!dir.path().join(format!("{old_kid}.pem")).exists());
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("keys.json")).unwrap()).unwrap();
    assert_eq!(index["keys"].as_array().unwrap().len(), 1);
}

#[test]
fn rotating_twice_retires_every_previous_key_and_prunes_on_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let mut ring = Es256KeyRing::open_or_create(dir.path(), at(T0)).unwrap();
    let first = ring.active_kid().to_owned();
    let second = ring.rotate(at(T0 + 1000)).unwrap();
    let third = ring.rotate(at(T0 + 2000)).unwrap();
    assert_eq!(ring.active_kid(), third);
    assert_eq!(
        kids(&ring.jwks(at(T0 + 2000))),
        [first.as_str(), &second, &third]
    );
    // The first key retired at +1 s, the second at +2 s.
    assert_eq!(
        kids(&ring.jwks(at(T0 + 1000 + 3_600_000))),
        [second.as_str(), &third]
    );
    let fourth = ring.rotate(at(T0 + 1000 + 3_600_000)).unwrap();
    assert_eq!(
        ring.keys().map(|key| key.kid.clone()).collect::<Vec<_>>(),
        [second, third, fourth]
    );
    assert!(!dir.path().join(format!("{first}.pem")).exists());
}

#[test]
fn the_directory_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, _) = setup(dir.path());
    let first = signer.ring().active_kid().to_owned();
    let token = signer.sign(&claims(at(T0))).unwrap();
    let second = signer.rotate(at(T0 + 1000)).unwrap();
    let entries: Vec<_> = signer.ring().keys().cloned().collect();

    for ring in [
        Es256KeyRing::open(dir.path()).unwrap(),
        Es256KeyRing::open_or_create(dir.path(), at(T0 + 2000)).unwrap(),
    ] {
        assert_eq!(ring.active_kid(), second);
        assert_eq!(ring.keys().cloned().collect::<Vec<_>>(), entries);
        let reopened = Es256TokenSigner::new(ring, ISSUER, Arc::new(ManualClock::new(at(T0))));
        assert_eq!(reopened.verify(&token, at(T0 + 1)).unwrap(), claims(at(T0)));
        assert_eq!(kids(&reopened.jwks()), [first.clone(), second.clone()]);
    }
}

#[test]
fn production_opening_needs_a_key_and_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Es256KeyRing::open(dir.path()),
        Err(KeyRingError::NoActiveKey(_))
    ));
    assert!(matches!(
        Es256KeyRing::open(dir.path().join("missing")),
        Err(KeyRingError::NoActiveKey(_))
    ));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    std::fs::write(dir.path().join("keys.json"), r#"{"version":1,"keys":[{"kid":"../x","createdAt":"2025-11-21T10:00:00.000Z","retiredAt":null}]}"#).unwrap();
    assert!(matches!(
        Es256KeyRing::open(dir.path()),
        Err(KeyRingError::Index { .. })
    ));
    std::fs::write(dir.path().join("keys.json"), r#"{"version":1,"keys":[{"kid":"k1","createdAt":"2025-11-21T10:00:00.000Z","retiredAt":null}]}"#).unwrap();
    assert!(matches!(
        Es256KeyRing::open(dir.path()),
        Err(KeyRingError::Io { .. })
    ));
    // A key placed by hand (traditional SEC1 PEM, any kid) is accepted.
    let key = ES256.generate_key_pair().unwrap();
    std::fs::write(
        dir.path().join("k1.pem"),
        key.to_traditional_pem_private_key(),
    )
    .unwrap();
    let ring = Es256KeyRing::open(dir.path()).unwrap();
    assert_eq!(ring.active_kid(), "k1");
    // A P-384 key is not an ES256 key.
    let p384 = josekit::jws::ES384.generate_key_pair().unwrap();
    std::fs::write(
        dir.path().join("k1.pem"),
        josekit::jwk::KeyPair::to_pem_private_key(&p384),
    )
    .unwrap();
    assert!(matches!(
        Es256KeyRing::open(dir.path()),
        Err(KeyRingError::Key { .. })
    ));
}

#[cfg(unix)]
#[test]
fn key_files_are_private() {
    use std::os::unix::fs::PermissionsExt;

    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("keys");
    let mut ring = Es256KeyRing::open_or_create(&dir, at(T0)).unwrap();
    ring.rotate(at(T0 + 1)).unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
        files += 1;
    }
    assert_eq!(files, 3, "keys.json and two keys, no temporary file");
    let pem = std::fs::read_to_string(dir.join(format!("{}.pem", ring.active_kid()))).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "PKCS#8");
}

#[test]
fn tokens_verify_against_the_jwks_with_another_library() {
    let dir = tempfile::tempdir().unwrap();
    let (signer, clock) = setup(dir.path());
    let jwks = serde_json::to_string(&signer.jwks()).unwrap();
    let key = &serde_json::from_str::<Value>(&jwks).unwrap()["keys"][0];
    let mut members: Vec<_> = key.as_object().unwrap().keys().collect();
    members.sort();
    assert_eq!(members, ["alg", "crv", "kid", "kty", "use", "x", "y"]);

    // Many tokens, so high-S signatures (OpenSSL does not normalise) are covered too.
    for n in 0..32 {
        let mut claims = claims(at(T0 + n * 1000));
        claims.token_id = format!("at_{n}");
        let token = signer.sign(&claims).unwrap();
        let payload = verify_independently(&jwks, &token).unwrap();
        assert_eq!(payload["iss"], ISSUER);
        assert_eq!(payload["aud"], claims.audience.as_str());
        assert_eq!(payload["sub"], "+15551234567");
        assert_eq!(payload["scope"], "openid phone profile");
        assert_eq!(payload["exp"], (T0 + n * 1000) / 1000 + 3600);
        assert_eq!(payload["jti"], claims.token_id.as_str());
    }

    let token = signer.sign(&claims(at(T0))).unwrap();
    let (signing_input, _) = token.rsplit_once('.').unwrap();
    let mut tampered = part(&token, 1);
    tampered["scope"] = "openid phone profile admin".into();
    let tampered = format!(
        "{}.{}.{}",
        token.split('.').next().unwrap(),
        encode(&tampered),
        token.rsplit_once('.').unwrap().1
    );
    assert!(verify_independently(&jwks, &tampered).is_err());
    assert!(verify_independently(&jwks, &format!("{signing_input}.")).is_err());

    // After a rotation the published set still verifies both generations.
    clock.set(at(T0 + 1000));
    signer.rotate(at(T0 + 1000)).unwrap();
    let rotated_jwks = serde_json::to_string(&signer.jwks()).unwrap();
    let new_token = signer.sign(&claims(at(T0 + 1000))).unwrap();
    assert!(verify_independently(&rotated_jwks, &token).is_ok());
    assert!(verify_independently(&rotated_jwks, &new_token).is_ok());
    assert!(
        verify_independently(&jwks, &new_token).is_err(),
        "new kid unknown to the old set"
    );
}
