//! PAdES B-T (issue 37 §1): with a time-stamping authority configured, every certificate's
//! signature carries an RFC 3161 token that validators accept; while the authority is down a
//! certificate waits (503 with Retry-After, nothing stored) and comes once it answers.

use idconsent_e2e::{Backend, TestApp, error, json};
use idconsent_server::config::TsaConfig;
use idconsent_tsa::testing::{OpensslTsa, TEST_POLICY};

use super::documents::{flipped_positions, pdf, pdfsig, pdftotext};
use super::{body, create, read, sign_as};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    certificates_carry_a_trusted_time_stamp(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    certificates_carry_a_trusted_time_stamp(Backend::Postgres).await;
}

async fn certificates_carry_a_trusted_time_stamp(backend: Backend) {
    let tsa = OpensslTsa::start();
    let (url, certs) = (tsa.url().to_owned(), tsa.root_pem_path());
    let Some(app) = TestApp::start_with(backend, |config| {
        config.signature.tsa = Some(TsaConfig {
            url,
            certs,
            policy: Some(TEST_POLICY.to_owned()),
            required: true,
        });
    })
    .await
    else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let document = pdf(1, "");
    let created = json(
        create(
            &app,
            &application,
            &key,
            &body(&document, &[("ann@example.com", "Ann Lee")]),
        )
        .await,
        201,
    )
    .await;
    let id = created["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();
    json(
        sign_as(&app, &application, &key, &id, "ann@example.com").await,
        200,
    )
    .await;
    let certificate_path = format!("/v1/signature/documents/{id}/certificate");

    // The authority is down: the certificate waits, and says when to come back.
    tsa.set_down(true);
    let waiting = read(&app, &application, &key, &certificate_path).await;
    assert_eq!(waiting.headers()["retry-after"], "30");
    let envelope = error(waiting, 503, "service_unavailable").await;
    assert!(
        envelope["message"]
            .as_str()
            .unwrap()
            .contains("time-stamping authority"),
        "{envelope}"
    );
    assert_eq!(tsa.answered(), 0);

    // It answers again: the certificate is made, stamped once, and kept.
    tsa.set_down(false);
    let certificate = read(&app, &application, &key, &certificate_path).await;
    assert_eq!(certificate.status(), 200);
    let signed = certificate.bytes().await.unwrap().to_vec();
    assert_eq!(tsa.answered(), 1);
    let again = read(&app, &application, &key, &certificate_path).await;
    assert_eq!(again.bytes().await.unwrap(), signed);
    assert_eq!(tsa.answered(), 1, "a kept certificate is not stamped again");
    if let Some(text) = pdftotext(&signed) {
        assert!(
            text.contains("RFC 3161 time stamp on the signature (PAdES B-T)"),
            "{text}"
        );
    }

    if let Some(report) = pdfsig(&signed) {
        assert!(report.contains("Signature is Valid."), "{report}");
    }
    let trusted = [app.data_dir().join("signing-cert.pem"), tsa.root_pem_path()];
    let report = pyhanko_timestamped(&signed, &trusted);
    if let Some((valid, report)) = report {
        assert!(valid, "pyHanko refused the certificate: {report}");
        for line in [
            "The signature is judged VALID.",
            "Signature timestamp token:",
            "This timestamp is backed by a time stamping authority.",
            "The timestamp token is cryptographically sound.",
            "TSA cert trust anchor: \"Common Name: idconsent test TSA root\"",
            "The TSA certificate is trusted.",
        ] {
            assert!(report.contains(line), "{line}: {report}");
        }
        // One flipped byte of the signed content or the token breaks it.
        for at in flipped_positions(&document, &signed).into_iter().take(2) {
            let mut tampered = signed.clone();
            tampered[at] ^= 0x01;
            let (valid, report) = pyhanko_timestamped(&tampered, &trusted).unwrap();
            assert!(
                !valid || !report.contains("judged VALID"),
                "byte {at}: {report}"
            );
        }
    }
}

/// pyHanko's validation trusting every file in `trusted`.
fn pyhanko_timestamped(pdf: &[u8], trusted: &[std::path::PathBuf]) -> Option<(bool, String)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("certificate.pdf");
    std::fs::write(&path, pdf).unwrap();
    let mut command = std::process::Command::new("pyhanko");
    command.args(["sign", "validate", "--pretty-print", "--trust-replace"]);
    for file in trusted {
        command.arg("--trust").arg(file);
    }
    match command.arg(&path).output() {
        Ok(output) => Some((
            output.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        )),
        Err(_) if std::env::var("CI").is_ok() => panic!("pyhanko is missing (pyhanko-cli)"),
        Err(_) => None,
    }
}
