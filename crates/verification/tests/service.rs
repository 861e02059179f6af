//! The verification service on the in-memory store and scripted engines: validation, the job's
//! life (claimed once, finished once with its event, taken over after a dead worker's lease,
//! given up after three attempts), the verdict through the service, tenancy, liveness.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use idconsent_verification::events::VERIFICATION_COMPLETED;
use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{
    BlobStore, Environment, IdGenerator, ManualClock, OsRandom, Timestamp, UlidGenerator, Unmetered,
};
use idconsent_verification::aamva::compose_aamva;
use idconsent_verification::liveness::LivenessReason;
use idconsent_verification::mrz::specimen_td3;
use idconsent_verification::testing::{
    InMemoryBlobs, InMemoryVerifications, ScriptedAnalysis, image_bytes,
};
use idconsent_verification::{
    CheckResult, Extraction, ImageFormat, Outcome, Requester, SubmitVerification,
    VerificationError, VerificationPorts, VerificationService, VerificationSettings,
    VerificationStatus,
};
use idconsent_webhook::testing::InMemoryDeliveries;

struct World {
    service: VerificationService,
    blobs: Arc<InMemoryBlobs>,
    engines: Arc<ScriptedAnalysis>,
    deliveries: Arc<InMemoryDeliveries>,
    clock: Arc<ManualClock>,
    requester: Requester,
}

impl World {
    /// Submits `input`, lets a worker analyse it, and reads the outcome back.
    async fn analysed(&self, input: SubmitVerification) -> Outcome {
        let id = self
            .service
            .submit(&self.requester, input)
            .await
            .unwrap()
            .id;
        self.service.analyse_due(5).await.unwrap();
        let done = self
            .service
            .get(&self.requester, id.as_str())
            .await
            .unwrap();
        done.outcome.unwrap()
    }
}

fn world() -> World {
    let clock = Arc::new(ManualClock::new(
        Timestamp::parse_rfc3339("2026-11-26T12:00:00.000Z").unwrap(),
    ));
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let deliveries = Arc::new(InMemoryDeliveries::default());
    let engines = Arc::new(ScriptedAnalysis::default());
    let blobs = Arc::new(InMemoryBlobs::default());
    let service = VerificationService::new(
        VerificationPorts {
            store: Arc::new(InMemoryVerifications::new(deliveries.clone())),
            blobs: blobs.clone(),
            images: engines.clone(),
            mrz: engines.clone(),
            barcodes: engines.clone(),
            faces: engines.clone(),
            metering: Arc::new(Unmetered),
            chip_challenges: Arc::new(
                idconsent_verification::testing::InMemoryChipChallenges::new(),
            ),
            chip_verifier: Arc::new(idconsent_verification::chip::NoChipVerifier::new(
                "no CSCA is trusted in these tests",
            )),
            random: Arc::new(OsRandom),
            clock: clock.clone(),
            ids: ids.clone(),
            outbox_written: None,
            job_created: None,
        },
        VerificationSettings::default(),
    );
    let application: ApplicationId = ids.next();
    World {
        service,
        blobs,
        engines,
        deliveries,
        clock,
        requester: Requester {
            application_id: application,
            environment: Environment::Sandbox,
            default_callback_url: Some("https://shop.example/hooks".into()),
        },
    }
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn passport_text() -> String {
    specimen_td3().join("\n")
}

fn passport(front: &[u8], selfie: &[u8]) -> SubmitVerification {
    SubmitVerification {
        document_type: "passport".into(),
        document_front: b64(front),
        document_back: None,
        selfie: b64(selfie),
        country: "SE".into(),
        ..SubmitVerification::default()
    }
}

#[tokio::test]
async fn a_passport_with_its_holder_is_verified_as_far_as_can_be_checked() {
    let world = world();
    let front = image_bytes(ImageFormat::Jpeg, "front");
    let selfie = image_bytes(ImageFormat::Png, "selfie");
    world.engines.mrz(&front, &passport_text());
    world.engines.face(&front, (0.0, 0.0));
    world.engines.face(&selfie, (0.3, 0.0));
    let submitted = world
        .service
        .submit(&world.requester, passport(&front, &selfie))
        .await
        .unwrap();
    assert_eq!(submitted.status(), VerificationStatus::Processing);

    assert_eq!(world.service.analyse_due(5).await.unwrap(), 1);
    assert_eq!(
        world.service.analyse_due(5).await.unwrap(),
        0,
        "finished once"
    );
    let done = world
        .service
        .get(&world.requester, submitted.id.as_str())
        .await
        .unwrap();
    let done_images = done.images.clone();
    let outcome = done.outcome.unwrap();
    assert_eq!(outcome.checks.data_extraction, Extraction::Completed);
    assert_eq!(outcome.checks.face_match, CheckResult::Passed);
    assert_eq!(
        outcome.checks.document_authenticity,
        CheckResult::Inconclusive
    );
    assert_eq!(outcome.status, VerificationStatus::NeedsReview);
    assert_eq!(outcome.extracted_data.unwrap().last_name, "ERIKSSON");
    let events: Vec<_> = world
        .deliveries
        .all()
        .into_iter()
        .map(|delivery| delivery.event_type.clone())
        .collect();
    assert_eq!(events, vec![VERIFICATION_COMPLETED]);
    // The images are not kept once the result is stored.
    for key in [&done_images.front, &done_images.selfie] {
        assert!(world.blobs.get(key).await.unwrap().is_none(), "{key}");
    }
}

#[tokio::test]
async fn someone_else_or_an_expired_document_is_rejected() {
    let world = world();
    let front = image_bytes(ImageFormat::Jpeg, "front");
    let stranger = image_bytes(ImageFormat::Jpeg, "stranger");
    world.engines.mrz(&front, &passport_text());
    world.engines.face(&front, (0.0, 0.0));
    world.engines.face(&stranger, (0.9, 0.0));
    let outcome = world.analysed(passport(&front, &stranger)).await;
    assert_eq!(outcome.checks.face_match, CheckResult::Failed);
    assert_eq!(outcome.status, VerificationStatus::Rejected);

    // The same passport seven years on: expired.
    world.clock.advance(Duration::from_secs(7 * 365 * 86_400));
    let selfie = image_bytes(ImageFormat::Jpeg, "selfie");
    let outcome = world.analysed(passport(&front, &selfie)).await;
    assert_eq!(outcome.status, VerificationStatus::Rejected);
    assert!(
        outcome
            .findings
            .iter()
            .any(|f| f.reason.contains("expired"))
    );
}

#[tokio::test]
async fn a_licence_is_read_from_its_back() {
    let world = world();
    let back = image_bytes(ImageFormat::Webp, "back");
    let payload = compose_aamva(
        "636014",
        &[
            ("DAQ", "D1"),
            ("DCS", "RIVERA"),
            ("DAC", "MARISOL"),
            ("DBB", "04151988"),
            ("DBA", "04152030"),
        ],
    );
    world.engines.barcode(&back, &payload);
    let mut input = passport(&image_bytes(ImageFormat::Jpeg, "front"), &back);
    input.document_type = "drivers_license".into();
    input.document_back = Some(b64(&back));
    let outcome = world.analysed(input).await;
    assert_eq!(outcome.checks.data_extraction, Extraction::Completed);
    assert_eq!(outcome.extracted_data.unwrap().document_number, "D1");
}

#[tokio::test]
async fn bad_input_is_refused_by_field_and_stores_nothing() {
    let world = world();
    let good = image_bytes(ImageFormat::Jpeg, "x");
    let refused = |input: SubmitVerification| {
        let world = &world;
        async move {
            match world.service.submit(&world.requester, input).await {
                Err(VerificationError::Invalid(errors)) => errors
                    .fields()
                    .iter()
                    .map(|field| field.field.clone())
                    .collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            }
        }
    };
    let mut input = passport(&good, &good);
    input.document_type = "library_card".into();
    input.country = "XX".into();
    input.selfie = b64(b"GIF89a");
    assert_eq!(refused(input).await, ["documentType", "country", "selfie"]);
    let mut input = passport(&good, &good);
    input.document_type = "national_id".into();
    assert_eq!(refused(input).await, ["documentBack"]);
    let mut input = passport(&good, &good);
    input.document_front = "not base64!".into();
    assert_eq!(refused(input).await, ["documentFront"]);
    let huge = vec![0xFF; (10 << 20) + 3];
    assert!(matches!(
        world
            .service
            .submit(&world.requester, passport(&huge, &good))
            .await,
        Err(VerificationError::TooLarge(_))
    ));
    assert_eq!(
        world.service.analyse_due(5).await.unwrap(),
        0,
        "nothing stored"
    );
}

#[tokio::test]
async fn another_application_or_environment_sees_nothing() {
    let world = world();
    let image = image_bytes(ImageFormat::Png, "x");
    let id = world
        .service
        .submit(&world.requester, passport(&image, &image))
        .await
        .unwrap()
        .id;
    let mut live = world.requester.clone();
    live.environment = Environment::Live;
    let mut other = world.requester.clone();
    let ids: Arc<dyn IdGenerator> =
        Arc::new(UlidGenerator::new(world.clock.clone(), Arc::new(OsRandom)));
    other.application_id = ids.next();
    for requester in [live, other] {
        assert!(matches!(
            world.service.get(&requester, id.as_str()).await,
            Err(VerificationError::NotFound(_))
        ));
    }
    assert!(matches!(
        world.service.get(&world.requester, "idv_nonsense").await,
        Err(VerificationError::NotFound(_))
    ));
}

#[tokio::test]
async fn a_job_whose_images_vanish_is_retried_then_given_to_a_person() {
    // A process that keeps dying (here: a job whose analysis fails every time) must not loop:
    // after three attempts the verification ends needs_review, with its event.
    let world = world();
    let image = image_bytes(ImageFormat::Png, "x");
    let verification = world
        .service
        .submit(&world.requester, passport(&image, &image))
        .await
        .unwrap();
    // The images are gone (say, the object store lost them): each attempt fails.
    world.blobs.clear();
    for _ in 0..3 {
        assert!(world.service.analyse_due(5).await.is_err());
        assert_eq!(
            world.service.analyse_due(5).await.unwrap(),
            0,
            "leased meanwhile"
        );
        world.clock.advance(Duration::from_secs(121));
    }
    assert_eq!(world.service.analyse_due(5).await.unwrap(), 1);
    let done = world
        .service
        .get(&world.requester, verification.id.as_str())
        .await
        .unwrap();
    let outcome = done.outcome.unwrap();
    assert_eq!(outcome.status, VerificationStatus::NeedsReview);
    assert!(
        outcome.findings[0]
            .reason
            .contains("did not finish after 3 attempts")
    );
}

#[tokio::test]
async fn liveness_refuses_unknown_challenges_and_answers_at_once() {
    let world = world();
    let image = b64(&image_bytes(ImageFormat::Jpeg, "face"));
    let answer = world
        .service
        .liveness(&world.requester, &image, Some("blink"))
        .await
        .unwrap();
    assert_eq!(answer.verdict.check, CheckResult::Inconclusive);
    assert!(!answer.verdict.is_live());
    assert!(matches!(
        world
            .service
            .liveness(&world.requester, &image, Some("wink"))
            .await,
        Err(VerificationError::Invalid(_))
    ));
}

#[tokio::test]
async fn liveness_asks_the_face_detector_about_a_clean_frame_and_marks_sandbox_answers() {
    let mut world = world();
    let face = image_bytes(ImageFormat::Jpeg, "face");
    let cup = image_bytes(ImageFormat::Jpeg, "cup of coffee");
    world.engines.face(&face, (0.0, 0.0));
    let judged = |image: &[u8]| b64(image);
    let with_face = world
        .service
        .liveness(&world.requester, &judged(&face), None)
        .await
        .unwrap();
    assert_eq!(with_face.verdict.reason, LivenessReason::NoSpoofCue);
    assert!(with_face.sandbox);
    let faceless = world
        .service
        .liveness(&world.requester, &judged(&cup), None)
        .await
        .unwrap();
    assert_eq!(faceless.verdict.reason, LivenessReason::NoFace);
    assert!(!faceless.verdict.is_live());
    world.requester.environment = Environment::Live;
    let live = world
        .service
        .liveness(&world.requester, &judged(&face), None)
        .await
        .unwrap();
    assert!(!live.sandbox);
    assert_eq!(live.verdict, with_face.verdict);
}

#[tokio::test]
async fn the_scripted_engines_pass_the_analysis_contracts() {
    use idconsent_verification::analysis_contract;
    let engines = ScriptedAnalysis::default();
    let passport = image_bytes(ImageFormat::Jpeg, "passport");
    engines.mrz(&passport, &passport_text());
    let blank = image_bytes(ImageFormat::Png, "blank");
    analysis_contract::mrz_reader(&engines, &[(passport.clone(), "L898902C3")], &blank).await;
    let licence = image_bytes(ImageFormat::Jpeg, "licence");
    engines.barcode(&licence, "@\n\u{1e}\rANSI 636014100001DL00310008DLDAQD1\r");
    let payload = "@\n\u{1e}\rANSI 636014100001DL00310008DLDAQD1\r".to_owned();
    analysis_contract::barcode_reader(&engines, &[(licence, payload)], &blank).await;
    let (holder, stranger) = (
        image_bytes(ImageFormat::Png, "a"),
        image_bytes(ImageFormat::Png, "b"),
    );
    engines.face(&passport, (0.0, 0.0));
    engines.face(&holder, (0.2, 0.1));
    engines.face(&stranger, (0.7, 0.3));
    analysis_contract::face_matcher(&engines, &passport, &holder, &stranger, &blank).await;
    analysis_contract::image_analyzer(&engines, &[passport, holder]).await;
}
