//! The RFC 3161 client against a real authority (OpenSSL's `ts -reply`), and the checks that
//! make it refuse what it must not embed.
#![allow(clippy::unwrap_used)]

use idconsent_signature::{TimestampAuthority, TimestampError};
use idconsent_tsa::testing::{OpensslTsa, TEST_POLICY};
use idconsent_tsa::{HttpTimestampAuthority, TsaSettings};

fn client(tsa: &OpensslTsa, pem: &[u8], policy: Option<&str>) -> HttpTimestampAuthority {
    HttpTimestampAuthority::new(TsaSettings::from_pem(tsa.url(), pem, policy).unwrap()).unwrap()
}

/// A self-signed certificate that issued nothing here.
fn stranger_pem() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "k.pem",
            "-out",
            "c.pem",
            "-days",
            "1",
            "-subj",
            "/CN=idconsent test TSA root",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(status.status.success());
    std::fs::read(dir.path().join("c.pem")).unwrap()
}

#[tokio::test]
async fn a_granted_token_stamps_our_digest_and_is_the_trusted_authoritys() {
    let tsa = OpensslTsa::start();
    let authority = client(&tsa, &tsa.root_pem(), Some(TEST_POLICY));
    let digest = [7u8; 32];
    let token = authority.timestamp(&digest).await.expect("a token");
    assert!(
        token.windows(32).any(|window| window == digest),
        "the imprint is in the token"
    );
    // Each call is a new request with a new nonce.
    let again = authority.timestamp(&digest).await.expect("a second token");
    assert_ne!(token, again);
    assert_eq!(tsa.answered(), 2);
}

#[tokio::test]
async fn a_token_from_an_authority_the_operator_does_not_trust_is_refused() {
    let tsa = OpensslTsa::start();
    // Same subject name as the real root, another key: only the signature tells them apart.
    let authority = client(&tsa, &stranger_pem(), None);
    let error = authority.timestamp(&[1u8; 32]).await.unwrap_err();
    assert!(
        matches!(&error, TimestampError::Refused(reason) if reason.contains("not a time-stamping authority the operator trusts")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_policy_the_authority_does_not_stamp_under_is_not_granted() {
    let tsa = OpensslTsa::start();
    let authority = client(&tsa, &tsa.root_pem(), Some("1.3.6.1.4.1.55555.9.9"));
    let error = authority.timestamp(&[2u8; 32]).await.unwrap_err();
    assert!(matches!(error, TimestampError::Unavailable(_)), "{error:?}");
}

#[tokio::test]
async fn an_authority_that_is_down_or_absent_is_unavailable() {
    let tsa = OpensslTsa::start();
    let authority = client(&tsa, &tsa.root_pem(), None);
    tsa.set_down(true);
    let error = authority.timestamp(&[3u8; 32]).await.unwrap_err();
    assert!(matches!(error, TimestampError::Unavailable(_)), "{error:?}");
    tsa.set_down(false);
    authority.timestamp(&[3u8; 32]).await.expect("back up");

    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/tsa", nobody.local_addr().unwrap());
    drop(nobody);
    let absent =
        HttpTimestampAuthority::new(TsaSettings::from_pem(&url, &tsa.root_pem(), None).unwrap())
            .unwrap();
    assert!(matches!(
        absent.timestamp(&[4u8; 32]).await.unwrap_err(),
        TimestampError::Unavailable(_)
    ));
}

#[tokio::test]
async fn a_replayed_answer_for_the_same_digest_is_refused_by_its_nonce() {
    let tsa = OpensslTsa::start();
    let authority = client(&tsa, &tsa.root_pem(), None);
    let digest = [5u8; 32];
    authority.timestamp(&digest).await.expect("a genuine token");
    tsa.set_replaying(true);
    let error = authority.timestamp(&digest).await.unwrap_err();
    assert!(
        matches!(&error, TimestampError::Refused(reason) if reason.contains("nonce")),
        "{error:?}"
    );
    // For another digest the imprint gives it away first.
    let error = authority.timestamp(&[6u8; 32]).await.unwrap_err();
    assert!(
        matches!(&error, TimestampError::Refused(reason) if reason.contains("another message")),
        "{error:?}"
    );
}
