//! The chip through the verification service, on a scripted verifier: which report and policy
//! give which checks and status, and the challenge's single use at submission.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{
    Environment, IdGenerator, ManualClock, OsRandom, Timestamp, UlidGenerator, Unmetered,
};
use idconsent_verification::chip::{
    ActiveAuthentication, ActiveFailure, ChipAuthentication, ChipReport, ChipVerifier, DataGroup,
    NoChipVerifier, PassiveAuthentication, PassiveFailure, Revocation,
};
use idconsent_verification::mrz::{compose_td3, parse_mrz, specimen_td3};
use idconsent_verification::testing::{
    InMemoryBlobs, InMemoryChipChallenges, InMemoryVerifications, ScriptedAnalysis,
    ScriptedChipVerifier, image_bytes,
};
use idconsent_verification::{
    CheckResult, ChipInput, ImageFormat, Requester, SubmitVerification, Verification,
    VerificationError, VerificationPorts, VerificationService, VerificationSettings,
    VerificationStatus,
};
use idconsent_webhook::testing::InMemoryDeliveries;

struct World {
    service: VerificationService,
    engines: Arc<ScriptedAnalysis>,
    requester: Requester,
}

fn world(verifier: Arc<dyn ChipVerifier>) -> World {
    let clock = Arc::new(ManualClock::new(
        Timestamp::parse_rfc3339("2026-11-27T12:00:00.000Z").unwrap(),
    ));
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let engines = Arc::new(ScriptedAnalysis::default());
    let service = VerificationService::new(
        VerificationPorts {
            store: Arc::new(InMemoryVerifications::new(Arc::new(
                InMemoryDeliveries::default(),
            ))),
            blobs: Arc::new(InMemoryBlobs::default()),
            images: engines.clone(),
            mrz: engines.clone(),
            barcodes: engines.clone(),
            faces: engines.clone(),
            metering: Arc::new(Unmetered),
            chip_challenges: Arc::new(InMemoryChipChallenges::new()),
            chip_verifier: verifier,
            random: Arc::new(OsRandom),
            clock,
            ids: ids.clone(),
            outbox_written: None,
            job_created: None,
        },
        VerificationSettings::default(),
    );
    let application: ApplicationId = ids.next();
    World {
        service,
        engines,
        requester: Requester {
            application_id: application,
            environment: Environment::Sandbox,
            default_callback_url: None,
        },
    }
}

fn tlv(tag: u8, value: &[u8]) -> String {
    let mut bytes = vec![tag, u8::try_from(value.len()).unwrap()];
    bytes.extend_from_slice(value);
    BASE64.encode(bytes)
}

fn chip(answer: Option<&[u8]>) -> ChipInput {
    ChipInput {
        dg1: tlv(0x61, b"mrz"),
        dg2: tlv(0x75, b"face"),
        dg15: Some(tlv(0x6F, b"key")),
        sod: tlv(0x77, b"sod"),
        active_authentication: answer
            .map(|challenge| (BASE64.encode(challenge), BASE64.encode(b"signature"))),
        ..ChipInput::default()
    }
}

fn report(active: ActiveAuthentication) -> ChipReport {
    ChipReport {
        passive_authentication: PassiveAuthentication::Passed,
        active_authentication: active,
        chip_authentication: ChipAuthentication::NotSupported,
        data_groups_verified: vec![DataGroup::Dg1, DataGroup::Dg2, DataGroup::Dg15],
        document_signer: None,
        csca: None,
        revocation: Revocation::NotChecked,
        mrz: Some(parse_mrz(&specimen_td3().join("\n"), 2026).unwrap()),
        portrait: None,
        personal_details: None,
        active_authentication_key: None,
        content_problems: Vec::new(),
    }
}

fn submission(
    chip: ChipInput,
    required: &[&str],
    clone_detection: Option<bool>,
) -> SubmitVerification {
    SubmitVerification {
        document_type: "passport".into(),
        document_front: BASE64.encode(image_bytes(ImageFormat::Jpeg, "front")),
        selfie: BASE64.encode(image_bytes(ImageFormat::Png, "selfie")),
        country: "SE".into(),
        chip: Some(chip),
        required_checks: Some(required.iter().map(|name| (*name).to_owned()).collect()),
        require_clone_detection: clone_detection,
        ..SubmitVerification::default()
    }
}

const CHIP_CHECKS: &[&str] = &["documentAuthenticity", "dataExtraction"];

impl World {
    async fn challenge(&self) -> [u8; 8] {
        *self
            .service
            .issue_chip_challenge(&self.requester)
            .await
            .unwrap()
            .bytes()
    }

    async fn finished(&self, input: SubmitVerification) -> Verification {
        let id = self
            .service
            .submit(&self.requester, input)
            .await
            .unwrap()
            .id;
        self.service.analyse_due(5).await.unwrap();
        self.service
            .get(&self.requester, id.as_str())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn passive_and_active_authentication_verify_with_dg1_as_the_identity() {
    let verifier = Arc::new(ScriptedChipVerifier::new(report(
        ActiveAuthentication::Passed,
    )));
    let world = world(verifier.clone());
    let challenge = world.challenge().await;
    let done = world
        .finished(submission(chip(Some(&challenge)), CHIP_CHECKS, None))
        .await;
    let outcome = done.outcome.unwrap();
    assert_eq!(outcome.status, VerificationStatus::Verified, "{outcome:?}");
    assert_eq!(outcome.checks.document_authenticity, CheckResult::Passed);
    assert_eq!(outcome.extracted_data.unwrap().document_number, "L898902C3");
    // The verifier was given the challenge the store handed over.
    assert_eq!(verifier.challenges_seen(), vec![Some(challenge)]);
    assert_eq!(done.chip.unwrap().details.active_authentication, "passed");
}

#[tokio::test]
async fn a_challenge_answers_one_submission_of_its_application() {
    let world = world(Arc::new(ScriptedChipVerifier::new(report(
        ActiveAuthentication::Passed,
    ))));
    let challenge = world.challenge().await;
    let input = submission(chip(Some(&challenge)), CHIP_CHECKS, None);
    world
        .service
        .submit(&world.requester, input.clone())
        .await
        .unwrap();
    let again = world.service.submit(&world.requester, input.clone()).await;
    assert!(
        matches!(again, Err(VerificationError::Invalid(_))),
        "{again:?}"
    );
    // Never issued at all.
    let invented = submission(chip(Some(&[9; 8])), CHIP_CHECKS, None);
    let refused = world.service.submit(&world.requester, invented).await;
    assert!(matches!(refused, Err(VerificationError::Invalid(_))));
}

#[tokio::test]
async fn a_refused_request_does_not_spend_its_challenge() {
    let world = world(Arc::new(ScriptedChipVerifier::new(report(
        ActiveAuthentication::Passed,
    ))));
    let challenge = world.challenge().await;
    let mut broken = chip(Some(&challenge));
    broken.dg1 = tlv(0x62, b"wrong tag");
    let refused = world
        .service
        .submit(&world.requester, submission(broken, CHIP_CHECKS, None))
        .await;
    let Err(VerificationError::Invalid(errors)) = refused else {
        panic!("{refused:?}")
    };
    assert!(format!("{errors:?}").contains("chip.dg1"), "{errors:?}");
    let empty = world
        .service
        .submit(
            &world.requester,
            submission(chip(Some(&challenge)), &[], None),
        )
        .await;
    assert!(matches!(empty, Err(VerificationError::Invalid(_))));
    let done = world
        .finished(submission(chip(Some(&challenge)), CHIP_CHECKS, None))
        .await;
    assert_eq!(done.status(), VerificationStatus::Verified);
}

#[tokio::test]
async fn passive_alone_passes_only_when_clone_detection_is_not_required() {
    let world = world(Arc::new(ScriptedChipVerifier::new(report(
        ActiveAuthentication::NotAttempted,
    ))));
    let strict = world
        .finished(submission(chip(None), CHIP_CHECKS, None))
        .await;
    let outcome = strict.outcome.unwrap();
    assert_eq!(
        outcome.checks.document_authenticity,
        CheckResult::Inconclusive
    );
    assert_eq!(outcome.status, VerificationStatus::NeedsReview);
    let relaxed = world
        .finished(submission(chip(None), CHIP_CHECKS, Some(false)))
        .await;
    assert_eq!(relaxed.status(), VerificationStatus::Verified);
}

#[tokio::test]
async fn failed_chip_checks_reject() {
    for failed in [
        report(ActiveAuthentication::Failed(
            ActiveFailure::SignatureInvalid,
        )),
        ChipReport {
            passive_authentication: PassiveAuthentication::Failed(PassiveFailure::HashMismatch(
                DataGroup::Dg2,
            )),
            ..report(ActiveAuthentication::NotAttempted)
        },
    ] {
        let world = world(Arc::new(ScriptedChipVerifier::new(failed)));
        let done = world
            .finished(submission(chip(None), CHIP_CHECKS, None))
            .await;
        let outcome = done.outcome.unwrap();
        assert_eq!(outcome.status, VerificationStatus::Rejected);
        assert_eq!(outcome.checks.document_authenticity, CheckResult::Failed);
    }
}

#[tokio::test]
async fn dg1_must_equal_the_photographed_mrz() {
    let world = world(Arc::new(ScriptedChipVerifier::new(report(
        ActiveAuthentication::NotAttempted,
    ))));
    let front = image_bytes(ImageFormat::Jpeg, "front");
    // Another passport of the same holder: every check digit holds, the number differs.
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
    world.engines.mrz(&front, &other.join("\n"));
    let done = world
        .finished(submission(chip(None), CHIP_CHECKS, Some(false)))
        .await;
    let outcome = done.outcome.unwrap();
    assert_eq!(outcome.status, VerificationStatus::Rejected, "{outcome:?}");
    assert!(
        outcome
            .findings
            .iter()
            .any(|finding| finding.reason.contains("differs from the photographed MRZ")),
        "{outcome:?}"
    );
    world.engines.mrz(&front, &specimen_td3().join("\n"));
    let done = world
        .finished(submission(chip(None), CHIP_CHECKS, Some(false)))
        .await;
    assert_eq!(done.status(), VerificationStatus::Verified);
}

#[tokio::test]
async fn without_a_verifier_the_chip_proves_nothing() {
    let world = world(Arc::new(NoChipVerifier::new("no CSCA is trusted")));
    let done = world
        .finished(submission(chip(None), CHIP_CHECKS, None))
        .await;
    let outcome = done.outcome.unwrap();
    assert_eq!(
        outcome.checks.document_authenticity,
        CheckResult::Inconclusive
    );
    assert_eq!(outcome.status, VerificationStatus::NeedsReview);
    assert_eq!(
        done.chip.unwrap().details.passive_authentication,
        "not_checked"
    );
}
