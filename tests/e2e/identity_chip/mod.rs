//! Identity from the chip through the real binary (issue 33), on generated PKI: a CSCA written
//! into `IDC_CSCA_DIR`, document signers it (or an impostor) issued, and chips they signed.
//! Each case proves one rule of docs/identity.md ("Identity from the chip").

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::identity::ocr_available;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{Backend, TestApp, error, json};
use idconsent_emrtd::fixtures::{
    Chip, ChipSpec, Csca, HashAlgorithm, KeyAlgorithm, Signer, SigningKey, portrait_jpeg,
};
use idconsent_image_analysis::fixtures::natural;
use idconsent_kernel::Timestamp;
use idconsent_verification::mrz::{compose_td3, specimen_td3};
use reqwest::Method;
use serde_json::{Value, json};

mod requests;

use requests::{
    bad_chip_requests_are_refused_and_spend_nothing,
    challenges_are_bound_to_their_application_and_single_use,
};

const DAY: Duration = Duration::from_secs(24 * 3600);
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// A server trusting one generated CSCA, an application, and that CSCA's document signer.
struct World {
    app: TestApp,
    application: Application,
    csca: Csca,
    signer: Signer,
    _trust_dir: tempfile::TempDir,
}

fn now() -> Timestamp {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    Timestamp::from_millis(i64::try_from(millis).unwrap())
}

impl World {
    async fn start(backend: Backend, trust: bool) -> Option<Self> {
        let at = now();
        let mut csca = Csca::new("UT", KeyAlgorithm::P256, at);
        let signer = csca.issue(KeyAlgorithm::P256, at.minus(30 * DAY), at.plus(10 * YEAR));
        let trust_dir = tempfile::tempdir().unwrap();
        std::fs::write(trust_dir.path().join("ut.pem"), csca.certificate_pem()).unwrap();
        // A file the store cannot use: logged at start, never fatal.
        std::fs::write(trust_dir.path().join("broken.pem"), "not a certificate").unwrap();
        let dir = trust_dir.path().to_path_buf();
        let app = TestApp::start_with(backend, move |config| {
            if trust {
                config.identity.csca_dir = Some(dir);
            }
        })
        .await?;
        let merchant = app.register_merchant().await;
        let application = app.application(&merchant).await;
        Some(Self {
            app,
            application,
            csca,
            signer,
            _trust_dir: trust_dir,
        })
    }

    async fn call(
        &self,
        application: &Application,
        path: &str,
        body: Option<&Value>,
    ) -> reqwest::Response {
        let bytes = body.map(|body| serde_json::to_vec(body).unwrap());
        let method = if path.starts_with("/v1/identity/verify/") {
            Method::GET
        } else {
            Method::POST
        };
        self.app
            .signed(
                method,
                path,
                &application.sandbox_key,
                &application.secret,
                bytes.as_deref().unwrap_or(b""),
            )
            .send()
            .await
            .unwrap()
    }

    /// A fresh challenge for `application`: its 8 bytes.
    async fn challenge_for(&self, application: &Application) -> Vec<u8> {
        let response = self
            .call(application, "/v1/identity/chip-challenge", None)
            .await;
        let data = json(response, 201).await["data"].clone();
        let expires = Timestamp::parse_rfc3339(data["expiresAt"].as_str().unwrap()).unwrap();
        let left = expires.as_millis() - self.app.now_millis();
        assert!(
            (299_000..=300_000).contains(&left),
            "five minutes: {left} ms"
        );
        let bytes = BASE64.decode(data["challenge"].as_str().unwrap()).unwrap();
        assert_eq!(bytes.len(), 8);
        bytes
    }

    async fn challenge(&self) -> Vec<u8> {
        self.challenge_for(&self.application).await
    }

    /// `POST /v1/identity/verify` with `chip`; the raw response.
    async fn submit_as(&self, application: &Application, body: &Value) -> reqwest::Response {
        self.call(application, "/v1/identity/verify", Some(body))
            .await
    }

    /// Submits, expects 201, waits for the result.
    async fn verified(&self, body: &Value) -> Value {
        let response = self.submit_as(&self.application, body).await;
        let created = json(response, 201).await;
        let id = created["data"]["verificationId"]
            .as_str()
            .unwrap()
            .to_owned();
        let started = Instant::now();
        loop {
            let path = format!("/v1/identity/verify/{id}");
            let data =
                json(self.call(&self.application, &path, None).await, 200).await["data"].clone();
            if data["status"] != "processing" {
                return data;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "{data}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn chip(&self, spec: &ChipSpec) -> Chip {
        Chip::build(spec, &self.signer)
    }
}

/// The specimen passport with an ECDSA P-256 active-authentication key.
fn with_aa() -> ChipSpec {
    ChipSpec {
        active_authentication: Some((
            SigningKey::generate(KeyAlgorithm::P256),
            HashAlgorithm::Sha256,
        )),
        ..ChipSpec::specimen(portrait_jpeg())
    }
}

/// The chip object of the body; with `(challenge, signature)` as its AA answer.
fn chip_json(chip: &Chip, answer: Option<(&[u8], Vec<u8>)>) -> Value {
    let optional = |file: &Option<Vec<u8>>| file.as_ref().map(|bytes| BASE64.encode(bytes));
    let mut body = json!({
        "dg1": BASE64.encode(&chip.dg1),
        "dg2": BASE64.encode(&chip.dg2),
        "sod": BASE64.encode(&chip.sod),
    });
    for (name, file) in [
        ("dg11", &chip.dg11),
        ("dg14", &chip.dg14),
        ("dg15", &chip.dg15),
    ] {
        if let Some(text) = optional(file) {
            body[name] = json!(text);
        }
    }
    if let Some((challenge, signature)) = answer {
        body["activeAuthentication"] = json!({
            "challenge": BASE64.encode(challenge),
            "signature": BASE64.encode(signature),
        });
    }
    body
}

/// A passport verification body: a photo without a zone unless `front` is given.
fn body(chip: Value, front: Option<Vec<u8>>, required: Option<&[&str]>) -> Value {
    let mut body = json!({
        "documentType": "passport",
        "documentFront": BASE64.encode(front.unwrap_or_else(|| natural(21))),
        "selfie": BASE64.encode(natural(22)),
        "country": "SE",
        "chip": chip,
    });
    if let Some(required) = required {
        body["requiredChecks"] = json!(required);
    }
    body
}

const CHIP_CHECKS: &[&str] = &["documentAuthenticity", "dataExtraction"];

fn chip_details(data: &Value) -> &Value {
    &data["checks"]["details"]["chip"]
}

macro_rules! with_trusted_csca {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(world) = super::World::start(idconsent_e2e::Backend::Sqlite, true).await {
                        super::$name(world).await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(world) = super::World::start(idconsent_e2e::Backend::Postgres, true).await {
                        super::$name(world).await;
                    }
                }
            }
        )*
    };
}

with_trusted_csca!(
    a_genuine_chip_is_verified_with_dg1_as_the_identity,
    a_flipped_byte_in_a_data_group_is_a_hash_mismatch,
    a_document_signer_no_trusted_csca_issued_fails,
    an_expired_document_signer_fails,
    a_clone_answering_with_another_key_or_an_old_answer_fails,
    a_chip_without_dg15_is_not_verified_when_clone_detection_is_required,
    dg1_differing_from_the_photographed_mrz_is_rejected,
    challenges_are_bound_to_their_application_and_single_use,
    bad_chip_requests_are_refused_and_spend_nothing,
);

idconsent_e2e::on_both_backends!(without_a_trust_store_a_chip_proves_nothing);

async fn a_genuine_chip_is_verified_with_dg1_as_the_identity(world: World) {
    let chip = world.chip(&with_aa());
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "verified", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "passed");
    assert_eq!(data["checks"]["dataExtraction"], "completed");
    assert_eq!(
        data["checks"]["required"],
        json!(["documentAuthenticity", "dataExtraction"])
    );
    let details = chip_details(&data);
    assert_eq!(details["passiveAuthentication"], "passed", "{details}");
    assert_eq!(details["activeAuthentication"], "passed");
    assert_eq!(details["chipAuthentication"], "not_supported");
    assert_eq!(
        details["dataGroupsVerified"],
        json!(["DG1", "DG2", "DG14", "DG15"])
    );
    assert!(
        details["documentSigner"]["subject"]
            .as_str()
            .unwrap()
            .contains("Document Signer"),
        "{details}"
    );
    assert!(
        details["csca"]["subject"]
            .as_str()
            .unwrap()
            .contains("CSCA UT")
    );
    assert_eq!(details["cloneDetectionRequired"], true);
    // The identity is DG1's, field for field (the ICAO specimen).
    assert_eq!(
        data["extractedData"],
        json!({
            "firstName": "ANNA MARIA",
            "lastName": "ERIKSSON",
            "dateOfBirth": "1974-08-12",
            "documentNumber": "L898902C3",
            "expiryDate": "2032-04-15",
            "nationality": "UTO",
        })
    );

    // The default required checks include the face match, which the same chip alone cannot
    // pass here (the generated portrait holds no face): not verified, and the body says why.
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            None,
            None,
        ))
        .await;
    assert_eq!(data["status"], "needs_review", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "passed");
    assert_eq!(
        data["checks"]["required"],
        json!(["documentAuthenticity", "faceMatch", "dataExtraction"])
    );
    assert_ne!(data["checks"]["faceMatch"], "passed");
}

async fn a_flipped_byte_in_a_data_group_is_a_hash_mismatch(world: World) {
    let mut chip = world.chip(&with_aa());
    // A byte inside the portrait's JPEG: the TLV stays well formed, only the hash changes.
    let middle = chip.dg2.len() / 2;
    chip.dg2[middle] ^= 0x01;
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "failed");
    let details = chip_details(&data);
    assert_eq!(details["passiveAuthentication"], "failed");
    assert_eq!(details["passiveFailure"], "data_group_hash_mismatch");
    assert!(
        !details["dataGroupsVerified"]
            .as_array()
            .unwrap()
            .contains(&json!("DG2"))
    );
}

async fn a_document_signer_no_trusted_csca_issued_fails(world: World) {
    let at = now();
    // Same name and key id as the trusted CSCA, another key: only the signature tells.
    let mut impostor = Csca::impostor_of(&world.csca, KeyAlgorithm::P256);
    let forger = impostor.issue(KeyAlgorithm::P256, at.minus(DAY), at.plus(YEAR));
    let chip = Chip::build(&with_aa(), &forger);
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "failed");
    assert_eq!(
        chip_details(&data)["passiveFailure"],
        "untrusted_document_signer"
    );
    // Nothing the forger signed is taken as the identity.
    assert_eq!(data["checks"]["dataExtraction"], "failed");
}

async fn an_expired_document_signer_fails(mut world: World) {
    let at = now();
    let expired = world
        .csca
        .issue(KeyAlgorithm::P256, at.minus(3 * YEAR), at.minus(DAY));
    let chip = Chip::build(&with_aa(), &expired);
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(
        chip_details(&data)["passiveFailure"],
        "document_signer_expired"
    );
}

async fn a_clone_answering_with_another_key_or_an_old_answer_fails(world: World) {
    let chip = world.chip(&with_aa());
    // A clone copies every file but not the private key: it answers with a key of its own.
    let clone_key = world.chip(&with_aa());
    let challenge = world.challenge().await;
    let forged = clone_key.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, forged))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "failed");
    let details = chip_details(&data);
    assert_eq!(details["passiveAuthentication"], "passed");
    assert_eq!(details["activeAuthentication"], "failed");
    assert_eq!(details["activeFailure"], "signature_invalid");

    // A genuine answer recorded earlier, replayed against a fresh challenge: wrong challenge.
    let old = world.challenge().await;
    let recorded = chip.answer(&old);
    let fresh = world.challenge().await;
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&fresh, recorded.clone()))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(chip_details(&data)["activeFailure"], "signature_invalid");
    // The genuine chip answers the old challenge once.
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&old, recorded.clone()))),
            None,
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "verified", "{data}");
    // Replayed with its own (now used) challenge: refused before anything is stored.
    let response = world
        .submit_as(
            &world.application,
            &body(
                chip_json(&chip, Some((&old, recorded))),
                None,
                Some(CHIP_CHECKS),
            ),
        )
        .await;
    let refused = error(response, 422, "validation_error").await;
    assert!(
        refused
            .to_string()
            .contains("chip.activeAuthentication.challenge"),
        "{refused}"
    );
}

async fn a_chip_without_dg15_is_not_verified_when_clone_detection_is_required(world: World) {
    let chip = world.chip(&ChipSpec::specimen(portrait_jpeg()));
    assert!(chip.dg15.is_none());
    let data = world
        .verified(&body(chip_json(&chip, None), None, Some(CHIP_CHECKS)))
        .await;
    assert_eq!(data["status"], "needs_review", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "inconclusive");
    let details = chip_details(&data);
    assert_eq!(details["passiveAuthentication"], "passed");
    assert_eq!(details["activeAuthentication"], "not_supported");
    assert_eq!(details["cloneDetectionRequired"], true);

    // A merchant that accepts passive authentication alone says so, and the result says what
    // was (not) proven.
    let mut relaxed = body(chip_json(&chip, None), None, Some(CHIP_CHECKS));
    relaxed["requireCloneDetection"] = json!(false);
    let data = world.verified(&relaxed).await;
    assert_eq!(data["status"], "verified", "{data}");
    assert_eq!(chip_details(&data)["cloneDetectionRequired"], false);
    assert!(
        data.to_string()
            .contains("a copy of the chip would pass too"),
        "{data}"
    );
}

async fn dg1_differing_from_the_photographed_mrz_is_rejected(world: World) {
    if !ocr_available() {
        return;
    }
    let photographed =
        idconsent_ocr_tesseract::fixtures::passport(&specimen_td3(), None, 1.5).unwrap();
    // The chip of another passport of the same holder: another number.
    let other = compose_td3(
        "P",
        "UTO",
        "ERIKSSON",
        "ANNA MARIA",
        "X12345678",
        "UTO",
        "740812",
        'F',
        "320415",
        "",
    );
    let chip = world.chip(&ChipSpec {
        mrz: other.to_vec(),
        ..with_aa()
    });
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            Some(photographed.clone()),
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "failed");
    assert!(
        data.to_string()
            .contains("differs from the photographed MRZ in document number"),
        "{data}"
    );

    // The same photo with its own chip: equal, verified.
    let chip = world.chip(&with_aa());
    let challenge = world.challenge().await;
    let answer = chip.answer(&challenge);
    let data = world
        .verified(&body(
            chip_json(&chip, Some((&challenge, answer))),
            Some(photographed),
            Some(CHIP_CHECKS),
        ))
        .await;
    assert_eq!(data["status"], "verified", "{data}");
    assert!(
        data.to_string().contains("DG1 equals the photographed MRZ"),
        "{data}"
    );
}

async fn without_a_trust_store_a_chip_proves_nothing(app: TestApp) {
    let world = World {
        application: {
            let merchant = app.register_merchant().await;
            app.application(&merchant).await
        },
        csca: Csca::new("UT", KeyAlgorithm::P256, now()),
        signer: {
            let mut csca = Csca::new("UT", KeyAlgorithm::P256, now());
            csca.issue(KeyAlgorithm::P256, now().minus(DAY), now().plus(YEAR))
        },
        app,
        _trust_dir: tempfile::tempdir().unwrap(),
    };
    let chip = world.chip(&ChipSpec::specimen(portrait_jpeg()));
    let data = world
        .verified(&body(chip_json(&chip, None), None, Some(CHIP_CHECKS)))
        .await;
    assert_eq!(data["status"], "needs_review", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "inconclusive");
    assert_eq!(chip_details(&data)["passiveAuthentication"], "not_checked");
    assert!(data.to_string().contains("IDC_CSCA_DIR"), "{data}");
}
