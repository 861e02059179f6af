//! Test doubles: an in-memory [`VerificationStore`] that passes the same contract suite as the
//! diesel adapter (one lock around everything makes each operation atomic, daily caps included;
//! outbox entries go to an [`InMemoryDeliveries`]; charges are not judged here, no plans in
//! memory), scripted analysis
//! engines, and images in memory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::blob::{StoredBlob, is_valid_prefix, select_page};
use idconsent_kernel::id::{ApplicationId, VerificationId};
use idconsent_kernel::{BlobError, BlobStore, CalendarDate, Clock, SystemClock, Timestamp};
use idconsent_webhook::Effects;
use idconsent_webhook::testing::InMemoryDeliveries;

use crate::analysis::{
    AnalysisError, BarcodeReader, FaceComparison, FaceMatcher, FaceSource, ImageAnalyzer,
    ImageFacts, ImageFormat, ImageRejection, MrzReader,
};
use crate::chip::{CHALLENGE_LEN, ChallengeStoreError, ChipChallenge, ChipChallengeStore};
use crate::model::{LivenessSignals, ModelUsed, Verification};
use crate::ports::{DailyCap, StoreError, VerificationStore};

#[derive(Debug)]
pub struct InMemoryVerifications {
    stored: Mutex<Stored>,
    deliveries: Arc<InMemoryDeliveries>,
}

/// Verifications and the daily counts of capped creates, behind one lock: a create and its
/// count change together.
#[derive(Debug, Default)]
struct Stored {
    verifications: BTreeMap<VerificationId, Verification>,
    daily: BTreeMap<(ApplicationId, CalendarDate), u32>,
}

impl InMemoryVerifications {
    /// Verifications whose events land in `deliveries`.
    pub fn new(deliveries: Arc<InMemoryDeliveries>) -> Self {
        Self {
            stored: Mutex::new(Stored::default()),
            deliveries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Stored> {
        self.stored.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl VerificationStore for InMemoryVerifications {
    async fn create(
        &self,
        verification: &Verification,
        effects: &Effects,
        cap: Option<DailyCap>,
    ) -> Result<(), StoreError> {
        let mut stored = self.lock();
        if stored.verifications.contains_key(&verification.id) {
            return Err(StoreError::Duplicate);
        }
        if let Some(cap) = cap {
            let count = stored
                .daily
                .entry((verification.application_id.clone(), cap.day))
                .or_default();
            if *count >= cap.limit {
                return Err(StoreError::DailyCapReached);
            }
            *count += 1;
        }
        stored
            .verifications
            .insert(verification.id.clone(), verification.clone());
        self.deliveries.enqueue_now(&effects.outbox);
        Ok(())
    }

    async fn find(&self, id: &VerificationId) -> Result<Option<Verification>, StoreError> {
        Ok(self.lock().verifications.get(id).cloned())
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Verification>, StoreError> {
        let mut stored = self.lock();
        let mut due: Vec<&mut Verification> = stored
            .verifications
            .values_mut()
            .filter(|job| job.outcome.is_none() && job.leased_until.is_none_or(|end| end <= now))
            .collect();
        due.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(due
            .into_iter()
            .take(limit as usize)
            .map(|job| {
                job.leased_until = Some(until);
                job.attempts += 1;
                job.version += 1;
                job.clone()
            })
            .collect())
    }

    async fn complete(
        &self,
        verification: &Verification,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let mut stored = self.lock();
        match stored.verifications.get(&verification.id) {
            Some(current) if current.version == expected_version => {
                stored
                    .verifications
                    .insert(verification.id.clone(), verification.clone());
                self.deliveries.enqueue_now(&effects.outbox);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn images_in_use(&self, ids: &[VerificationId]) -> Result<BTreeSet<String>, StoreError> {
        let stored = self.lock();
        Ok(ids
            .iter()
            .filter_map(|id| stored.verifications.get(id))
            .filter(|job| job.outcome.is_none())
            .flat_map(|job| job.images.keys())
            .collect())
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemoryVerifications;
    use crate::contract::Stores;

    async fn stores() -> Option<(Stores, ())> {
        let deliveries = Arc::new(InMemoryDeliveries::default());
        Some((
            Stores {
                verifications: Arc::new(InMemoryVerifications::new(deliveries.clone())),
                deliveries,
            },
            (),
        ))
    }

    crate::verification_store_contract!(stores);
}

/// Analysis engines for service tests: each answers what the test registered for an image's
/// bytes, as an engine that read them would; unregistered images read as nothing found.
/// `inspect` accepts what starts like a JPEG, PNG or WebP file.
#[derive(Debug, Default)]
pub struct ScriptedAnalysis {
    mrz: Mutex<BTreeMap<Vec<u8>, String>>,
    barcodes: Mutex<BTreeMap<Vec<u8>, String>>,
    /// A face's "embedding": a point whose distance to another is the comparison.
    faces: Mutex<BTreeMap<Vec<u8>, (f64, f64)>>,
}

impl ScriptedAnalysis {
    pub fn mrz(&self, image: &[u8], text: &str) {
        lock(&self.mrz).insert(image.to_vec(), text.to_owned());
    }
    pub fn barcode(&self, image: &[u8], payload: &str) {
        lock(&self.barcodes).insert(image.to_vec(), payload.to_owned());
    }
    pub fn face(&self, image: &[u8], at: (f64, f64)) {
        lock(&self.faces).insert(image.to_vec(), at);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A minimal file of `format`'s signature followed by `tag`, which the scripted inspector
/// accepts (tests register readings under these bytes).
pub fn image_bytes(format: ImageFormat, tag: &str) -> Vec<u8> {
    let mut bytes = match format {
        ImageFormat::Jpeg => vec![0xFF, 0xD8, 0xFF, 0xE0],
        ImageFormat::Png => b"\x89PNG\r\n\x1a\n".to_vec(),
        ImageFormat::Webp => b"RIFF\0\0\0\0WEBPVP8 ".to_vec(),
    };
    bytes.extend_from_slice(tag.as_bytes());
    bytes
}

#[async_trait]
impl ImageAnalyzer for ScriptedAnalysis {
    async fn inspect(&self, bytes: &[u8]) -> Result<ImageFacts, ImageRejection> {
        let format = if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            ImageFormat::Jpeg
        } else if bytes.starts_with(b"\x89PNG") {
            ImageFormat::Png
        } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
            ImageFormat::Webp
        } else {
            return Err(ImageRejection::NotAnImage);
        };
        Ok(ImageFacts {
            format,
            width: 640,
            height: 480,
        })
    }

    async fn liveness_signals(&self, _image: &[u8]) -> Result<LivenessSignals, AnalysisError> {
        Ok(LivenessSignals {
            moire: 5.0,
            halftone: 1.5,
            sharpness: 90.0,
            pixels: 640 * 480,
            screen_sized: false,
            jpeg_quality: Some(90),
        })
    }
}

#[async_trait]
impl MrzReader for ScriptedAnalysis {
    async fn read_mrz(&self, image: &[u8]) -> Result<String, AnalysisError> {
        Ok(lock(&self.mrz).get(image).cloned().unwrap_or_default())
    }
    fn models(&self) -> Vec<ModelUsed> {
        vec![ModelUsed {
            name: "scripted-mrz".into(),
            version: "test".into(),
            sha256: "0".repeat(64),
        }]
    }
}

#[async_trait]
impl BarcodeReader for ScriptedAnalysis {
    async fn read_pdf417(&self, image: &[u8]) -> Result<Option<String>, AnalysisError> {
        Ok(lock(&self.barcodes).get(image).cloned())
    }
}

#[async_trait]
impl FaceMatcher for ScriptedAnalysis {
    async fn compare(
        &self,
        document: &[u8],
        selfie: &[u8],
    ) -> Result<FaceComparison, AnalysisError> {
        let faces = lock(&self.faces);
        let Some(on_document) = faces.get(document) else {
            return Ok(FaceComparison::NoFace(FaceSource::Document));
        };
        let Some(in_selfie) = faces.get(selfie) else {
            return Ok(FaceComparison::NoFace(FaceSource::Selfie));
        };
        let (dx, dy) = (on_document.0 - in_selfie.0, on_document.1 - in_selfie.1);
        Ok(FaceComparison::Distance((dx * dx + dy * dy).sqrt()))
    }
    async fn find_face(&self, image: &[u8]) -> Result<bool, AnalysisError> {
        Ok(lock(&self.faces).contains_key(image))
    }
    fn models(&self) -> Vec<ModelUsed> {
        Vec::new()
    }
}

/// Images in memory (the kernel's `BlobStore` port), each dated by the store's clock (the
/// system clock unless a test hands it another: [`InMemoryBlobs::with_clock`]).
#[derive(Debug)]
pub struct InMemoryBlobs {
    objects: Mutex<BTreeMap<String, (Vec<u8>, Timestamp)>>,
    clock: Arc<dyn Clock>,
}

impl Default for InMemoryBlobs {
    fn default() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }
}

impl InMemoryBlobs {
    /// A store whose objects are dated by `clock`.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            objects: Mutex::new(BTreeMap::new()),
            clock,
        }
    }

    /// Loses every image, as a misconfigured or wiped object store would.
    pub fn clear(&self) {
        lock(&self.objects).clear();
    }

    /// Every key held, in order.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.objects).keys().cloned().collect()
    }
}

#[async_trait]
impl BlobStore for InMemoryBlobs {
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BlobError> {
        let now = self.clock.now();
        lock(&self.objects).insert(valid(key)?.to_owned(), (bytes, now));
        Ok(())
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BlobError> {
        Ok(lock(&self.objects)
            .get(valid(key)?)
            .map(|(bytes, _)| bytes.clone()))
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        lock(&self.objects).remove(valid(key)?);
        Ok(())
    }
    async fn list_stored_before(
        &self,
        prefix: &str,
        stored_before: Timestamp,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredBlob>, BlobError> {
        if !is_valid_prefix(prefix) {
            return Err(BlobError::InvalidKey);
        }
        let found = lock(&self.objects)
            .iter()
            .filter(|(key, _)| key.starts_with(prefix))
            .map(|(key, (_, stored_at))| StoredBlob {
                key: key.clone(),
                stored_at: *stored_at,
            })
            .collect();
        Ok(select_page(found, stored_before, after, limit))
    }
}

/// For a test that needs an installed analysis engine (`found`): the engine, or — when it is
/// missing — a note and `None`, so that a development machine without the engines still runs
/// the rest; a failure instead when `REQUIRE_BACKENDS` names `identity` (CI), where a skipped
/// analysis would prove nothing.
pub fn engine_or_skip<T>(what: &str, found: Result<T, String>) -> Option<T> {
    match found {
        Ok(engine) => Some(engine),
        Err(reason) => {
            let required = std::env::var("REQUIRE_BACKENDS")
                .is_ok_and(|backends| backends.split(',').any(|b| b.trim() == "identity"));
            assert!(!required, "{what} is required here: {reason}");
            eprintln!("NOTE: {what} tests skipped: {reason}");
            None
        }
    }
}

fn valid(key: &str) -> Result<&str, BlobError> {
    if idconsent_kernel::blob::is_valid_key(key) {
        Ok(key)
    } else {
        Err(BlobError::InvalidKey)
    }
}

#[cfg(test)]
mod blob_contract {
    use std::sync::Arc;

    use idconsent_kernel::BlobStore;

    use super::InMemoryBlobs;

    async fn store() -> Option<(Arc<dyn BlobStore>, ())> {
        Some((Arc::new(InMemoryBlobs::default()), ()))
    }

    idconsent_kernel::blob_store_contract!(store);
}

/// Issued chip challenges in memory: a verified double of [`ChipChallengeStore`] (it passes the
/// contract suite), one lock making each take atomic.
#[derive(Debug, Default)]
pub struct InMemoryChipChallenges {
    stored: Mutex<BTreeMap<(ApplicationId, [u8; CHALLENGE_LEN]), ChipChallenge>>,
}

impl InMemoryChipChallenges {
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl ChipChallengeStore for InMemoryChipChallenges {
    async fn issue(&self, challenge: &ChipChallenge) -> Result<(), ChallengeStoreError> {
        let mut stored = self.stored.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (challenge.application().clone(), *challenge.bytes());
        if stored.contains_key(&key) {
            return Err(ChallengeStoreError::Duplicate);
        }
        stored.retain(|_, kept| kept.expires_at() > challenge.issued_at());
        stored.insert(key, challenge.clone());
        Ok(())
    }

    async fn take(
        &self,
        application: &ApplicationId,
        bytes: &[u8; CHALLENGE_LEN],
        now: Timestamp,
    ) -> Result<Option<ChipChallenge>, ChallengeStoreError> {
        let mut stored = self.stored.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = stored.remove(&(application.clone(), *bytes));
        Ok(taken.filter(|challenge| now < challenge.expires_at()))
    }
}

#[cfg(all(test, feature = "contract"))]
mod chip_challenge_contract {
    use std::sync::Arc;

    use super::InMemoryChipChallenges;
    use crate::chip::ChipChallengeStore;

    async fn store() -> Option<(Arc<dyn ChipChallengeStore>, ())> {
        Some((Arc::new(InMemoryChipChallenges::new()), ()))
    }

    crate::chip_challenge_store_contract!(store);
}

/// A chip verifier that answers every check with one report (and records the challenge it was
/// given), for service tests that need no cryptography.
#[derive(Debug)]
pub struct ScriptedChipVerifier {
    report: crate::chip::ChipReport,
    seen: Mutex<Vec<Option<[u8; CHALLENGE_LEN]>>>,
}

impl ScriptedChipVerifier {
    pub fn new(report: crate::chip::ChipReport) -> Self {
        Self {
            report,
            seen: Mutex::new(Vec::new()),
        }
    }

    /// The issued challenge of each check, in order.
    pub fn challenges_seen(&self) -> Vec<Option<[u8; CHALLENGE_LEN]>> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl crate::chip::ChipVerifier for ScriptedChipVerifier {
    async fn verify(
        &self,
        check: crate::chip::ChipCheck,
    ) -> Result<crate::chip::ChipReport, crate::chip::ChipVerifierError> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(check.issued_challenge);
        Ok(self.report.clone())
    }
}
