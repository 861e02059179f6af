//! A person's identity images live only while a verification needs them: a submission refused
//! after its first upload (the store fails, an upload fails) takes its images back, and the
//! sweep deletes what no processing verification names once it is older than the analysis
//! lease — keeping what is younger, and what a processing verification names.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use idconsent_kernel::blob::StoredBlob;
use idconsent_kernel::id::{ApplicationId, VerificationId};
use idconsent_kernel::{
    BlobError, BlobStore, Environment, IdGenerator, ManualClock, OsRandom, Timestamp,
    UlidGenerator, Unmetered,
};
use idconsent_verification::testing::{
    InMemoryBlobs, InMemoryVerifications, ScriptedAnalysis, image_bytes,
};
use idconsent_verification::{
    ImageFormat, Requester, StoreError, SubmitVerification, Verification, VerificationPorts,
    VerificationService, VerificationSettings, VerificationStore,
};
use idconsent_webhook::Effects;
use idconsent_webhook::testing::InMemoryDeliveries;

/// The in-memory store, whose `create` fails as a database that went away would.
#[derive(Debug)]
struct StoreAway(InMemoryVerifications);

#[async_trait]
impl VerificationStore for StoreAway {
    async fn create(
        &self,
        _: &Verification,
        _: &Effects,
        _: Option<idconsent_verification::ports::DailyCap>,
    ) -> Result<(), StoreError> {
        Err(StoreError::Unavailable("database away".into()))
    }
    async fn find(&self, id: &VerificationId) -> Result<Option<Verification>, StoreError> {
        self.0.find(id).await
    }
    async fn claim_due(
        &self,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Verification>, StoreError> {
        self.0.claim_due(now, until, limit).await
    }
    async fn complete(
        &self,
        verification: &Verification,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        self.0
            .complete(verification, expected_version, effects)
            .await
    }
    async fn images_in_use(&self, ids: &[VerificationId]) -> Result<BTreeSet<String>, StoreError> {
        self.0.images_in_use(ids).await
    }
}

/// Images in memory, the second `put` of which fails (a full disk, an object store away).
#[derive(Debug)]
struct SecondPutFails {
    inner: Arc<InMemoryBlobs>,
    puts: AtomicUsize,
}

#[async_trait]
impl BlobStore for SecondPutFails {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        if self.puts.fetch_add(1, Ordering::SeqCst) == 1 {
            // The write may have left part of the object behind.
            self.inner.put(key, b"part".to_vec()).await?;
            return Err(BlobError::Unavailable("disk full".into()));
        }
        self.inner.put(key, bytes).await
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.inner.delete(key).await
    }
    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError> {
        self.inner
            .list_stored_before(prefix, stored_before, after, limit)
            .await
    }
}

/// Images in memory, each `put` taking `per_put` of the clock's time (a stalled disk).
#[derive(Debug)]
struct SlowPuts {
    inner: Arc<InMemoryBlobs>,
    clock: Arc<ManualClock>,
    per_put: Duration,
}

#[async_trait]
impl BlobStore for SlowPuts {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        self.inner.put(key, bytes).await?;
        self.clock.advance(self.per_put);
        Ok(())
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        self.inner.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        self.inner.delete(key).await
    }
    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError> {
        self.inner
            .list_stored_before(prefix, stored_before, after, limit)
            .await
    }
}

struct World {
    service: VerificationService,
    blobs: Arc<InMemoryBlobs>,
    clock: Arc<ManualClock>,
    requester: Requester,
}

fn world_with(
    store: impl FnOnce(Arc<InMemoryDeliveries>) -> Arc<dyn VerificationStore>,
    blobs: impl FnOnce(Arc<InMemoryBlobs>, Arc<ManualClock>) -> Arc<dyn BlobStore>,
) -> World {
    let clock = Arc::new(ManualClock::new(
        Timestamp::parse_rfc3339("2026-11-27T09:00:00.000Z").unwrap(),
    ));
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let engines = Arc::new(ScriptedAnalysis::default());
    let memory = Arc::new(InMemoryBlobs::with_clock(clock.clone()));
    let service = VerificationService::new(
        VerificationPorts {
            store: store(Arc::new(InMemoryDeliveries::default())),
            blobs: blobs(memory.clone(), clock.clone()),
            images: engines.clone(),
            mrz: engines.clone(),
            barcodes: engines.clone(),
            faces: engines,
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
        blobs: memory,
        clock,
        requester: Requester {
            application_id: application,
            environment: Environment::Live,
            default_callback_url: None,
        },
    }
}

fn world() -> World {
    world_with(
        |deliveries| Arc::new(InMemoryVerifications::new(deliveries)),
        |blobs, _| blobs,
    )
}

fn licence() -> SubmitVerification {
    use base64::Engine;
    let b64 = |tag: &str| {
        base64::engine::general_purpose::STANDARD.encode(image_bytes(ImageFormat::Jpeg, tag))
    };
    SubmitVerification {
        document_type: "drivers_license".into(),
        document_front: b64("front"),
        document_back: Some(b64("back")),
        selfie: b64("selfie"),
        country: "US".into(),
        ..SubmitVerification::default()
    }
}

#[tokio::test]
async fn a_submission_the_store_refuses_takes_its_images_back() {
    let world = world_with(
        |deliveries| Arc::new(StoreAway(InMemoryVerifications::new(deliveries))),
        |blobs, _| blobs,
    );
    let refused = world.service.submit(&world.requester, licence()).await;
    assert!(refused.is_err());
    assert_eq!(world.blobs.keys(), Vec::<String>::new());
}

#[tokio::test]
async fn a_failed_upload_takes_the_uploaded_images_back() {
    let world = world_with(
        |deliveries| Arc::new(InMemoryVerifications::new(deliveries)),
        |blobs, _| {
            Arc::new(SecondPutFails {
                inner: blobs,
                puts: AtomicUsize::new(0),
            })
        },
    );
    let refused = world.service.submit(&world.requester, licence()).await;
    assert!(refused.is_err());
    assert_eq!(world.blobs.keys(), Vec::<String>::new());
}

#[tokio::test]
async fn uploads_that_outlast_half_the_lease_are_refused_and_taken_back() {
    // The sweep could take such images before the row that needs them is written.
    let world = world_with(
        |deliveries| Arc::new(InMemoryVerifications::new(deliveries)),
        |blobs, clock| {
            Arc::new(SlowPuts {
                inner: blobs,
                clock,
                per_put: Duration::from_secs(21),
            })
        },
    );
    let refused = world.service.submit(&world.requester, licence()).await;
    assert!(refused.is_err());
    assert_eq!(world.blobs.keys(), Vec::<String>::new());
}

#[tokio::test]
async fn the_sweep_deletes_old_orphans_and_keeps_young_ones_and_those_in_use() {
    let world = world();
    let lease = VerificationSettings::default().analysis_lease;
    // A finished verification whose worker could not delete its images (they are put back).
    let finished = world
        .service
        .submit(&world.requester, licence())
        .await
        .unwrap();
    let mut kept = Vec::new();
    for key in finished.images.keys() {
        kept.push((key.clone(), world.blobs.get(&key).await.unwrap().unwrap()));
    }
    assert_eq!(world.service.analyse_due(5).await.unwrap(), 1);
    for (key, bytes) in kept {
        world.blobs.put(&key, bytes).await.unwrap();
    }
    // A processing verification (no worker takes it here), orphans of refusals whose clean-up
    // failed — more than one listing page of them — and a key that names no verification.
    let in_use = world
        .service
        .submit(&world.requester, licence())
        .await
        .unwrap();
    let ids: Arc<dyn IdGenerator> =
        Arc::new(UlidGenerator::new(world.clock.clone(), Arc::new(OsRandom)));
    for _ in 0..450 {
        let orphan: VerificationId = ids.next();
        let key = format!("identity/{orphan}/selfie");
        world.blobs.put(&key, b"face".to_vec()).await.unwrap();
    }
    world
        .blobs
        .put("identity/stray", b"face".to_vec())
        .await
        .unwrap();
    // Nothing is older than the lease yet: nothing goes.
    assert_eq!(world.service.sweep_orphaned_images().await.unwrap(), 0);
    assert_eq!(world.blobs.keys().len(), 3 + 3 + 450 + 1);

    world.clock.advance(lease + Duration::from_secs(1));
    let young = format!("identity/{}/front", ids.next::<VerificationId>());
    world.blobs.put(&young, b"face".to_vec()).await.unwrap();
    assert_eq!(
        world.service.sweep_orphaned_images().await.unwrap(),
        3 + 450 + 1
    );
    let mut left: Vec<String> = in_use.images.keys().collect();
    left.push(young);
    left.sort();
    assert_eq!(world.blobs.keys(), left);
    // A second sweep (another process, say) finds nothing more to do.
    assert_eq!(world.service.sweep_orphaned_images().await.unwrap(), 0);
}
