use crate::events::VERIFICATION_COMPLETED;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::id::{ApplicationId, TypedId, VerificationId};
use idconsent_kernel::{
    BlobStore, Clock, Environment, IdGenerator, Metering, Nudge, QuotaExceeded, RandomSource,
    Timestamp, ValidationErrors,
};
use idconsent_webhook::{Effects, Outbox};

use crate::analysis::{AnalysisError, BarcodeReader, FaceMatcher, ImageAnalyzer, MrzReader};
use crate::chip::{ChipChallengeStore, ChipVerifier};
use crate::country::is_country;
use crate::error::VerificationError;
use crate::events::StatusBody;
use crate::liveness::{self, CHALLENGES, FacePresence, LivenessVerdict};
use crate::model::{
    CheckResult, Checks, DocumentType, Extraction, Finding, Images, LivenessSignals, Outcome,
    Verification, VerificationStatus,
};
use crate::ports::{StoreError, VerificationStore};
use crate::verdict::{DocumentRead, Readings, conclude, confidence_of};

mod chip;
mod images;

pub use chip::ChipInput;

pub use images::IMAGES_PREFIX;

/// Sandbox verifications per application per UTC day unless configured otherwise.
pub const DEFAULT_SANDBOX_DAILY_CAP: u32 = 100;

#[derive(Debug, Clone)]
pub struct VerificationSettings {
    /// The largest decoded image accepted (10 MiB).
    pub max_image_bytes: usize,
    /// How long a worker may analyse before another process takes the job over.
    pub analysis_lease: Duration,
    /// Analyses started before a job is given up as `needs_review`.
    pub max_attempts: u32,
    /// Verifications one application may submit with sandbox keys per UTC day: sandbox work is
    /// never billed, but each costs the service an analysis (issue 31).
    pub sandbox_daily_cap: u32,
}

impl Default for VerificationSettings {
    fn default() -> Self {
        Self {
            max_image_bytes: 10 << 20,
            analysis_lease: Duration::from_secs(120),
            max_attempts: 3,
            sandbox_daily_cap: DEFAULT_SANDBOX_DAILY_CAP,
        }
    }
}

/// The application asking, as its signed request established it.
#[derive(Debug, Clone)]
pub struct Requester {
    pub application_id: ApplicationId,
    pub environment: Environment,
    /// Where `verification.completed` goes (CONTRACT §8: the application's callback URL).
    pub default_callback_url: Option<String>,
}

/// A verify request as received (spec §2.7): images as base64.
#[derive(Debug, Clone, Default)]
pub struct SubmitVerification {
    pub document_type: String,
    pub document_front: String,
    pub document_back: Option<String>,
    pub selfie: String,
    pub country: String,
    /// The chip read over NFC (issue 33).
    pub chip: Option<ChipInput>,
    /// `requiredChecks`; `None` for the default.
    pub required_checks: Option<Vec<String>>,
    /// `requireCloneDetection`; `None` for the default (`true`).
    pub require_clone_detection: Option<bool>,
}

/// The liveness answer (spec §2.7).
#[derive(Debug, Clone)]
pub struct LivenessAnswer {
    pub verdict: LivenessVerdict,
    /// The measurements, when the image could be measured.
    pub signals: Option<LivenessSignals>,
    pub challenge: Option<String>,
    /// Asked with a sandbox key.
    pub sandbox: bool,
    pub processing_time: Duration,
}

/// The ports a [`VerificationService`] works through.
#[derive(Debug, Clone)]
pub struct VerificationPorts {
    pub store: Arc<dyn VerificationStore>,
    pub blobs: Arc<dyn BlobStore>,
    pub images: Arc<dyn ImageAnalyzer>,
    pub mrz: Arc<dyn MrzReader>,
    pub barcodes: Arc<dyn BarcodeReader>,
    pub faces: Arc<dyn FaceMatcher>,
    pub metering: Arc<dyn Metering>,
    /// Active-authentication challenges issued and waiting for their answer.
    pub chip_challenges: Arc<dyn ChipChallengeStore>,
    /// Proves chip evidence (`NoChipVerifier` when no CSCA is trusted).
    pub chip_verifier: Arc<dyn ChipVerifier>,
    /// Where challenges' bytes come from.
    pub random: Arc<dyn RandomSource>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub outbox_written: Option<Arc<dyn Nudge>>,
    /// Wakes the analysis workers when a verification is submitted.
    pub job_created: Option<Arc<dyn Nudge>>,
}

#[derive(Debug, Clone)]
pub struct VerificationService {
    ports: VerificationPorts,
    settings: VerificationSettings,
}

impl VerificationService {
    pub fn new(ports: VerificationPorts, settings: VerificationSettings) -> Self {
        Self { ports, settings }
    }

    pub fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// What the 201 promises: analysis usually ends within this.
    pub fn estimated_time(&self) -> &'static str {
        "10s"
    }

    /// Validates the request, keeps the images and stores the verification as a job, charged
    /// to the month's verification quota in the same transaction; a refusal after the images
    /// were stored deletes them again. Analysis runs later ([`Self::analyse_due`]), off the
    /// request.
    pub async fn submit(
        &self,
        requester: &Requester,
        input: SubmitVerification,
    ) -> Result<Verification, VerificationError> {
        let mut errors = ValidationErrors::new();
        let document_type = DocumentType::parse(&input.document_type);
        if document_type.is_none() {
            errors.push(
                "documentType",
                "must be passport, national_id or drivers_license",
            );
        }
        let country =
            (input.country.len() == 2 && is_country(&input.country)).then(|| input.country.clone());
        if country.is_none() {
            errors.push(
                "country",
                "must be an ISO 3166-1 alpha-2 code in upper case",
            );
        }
        let front = self
            .check_image(&mut errors, "documentFront", &input.document_front)
            .await?;
        let selfie = self
            .check_image(&mut errors, "selfie", &input.selfie)
            .await?;
        let back = match (&input.document_back, document_type) {
            (Some(back), _) => self.check_image(&mut errors, "documentBack", back).await?,
            (None, Some(kind)) if kind.needs_back() => {
                errors.push("documentBack", format!("is required for {}", kind.as_str()));
                None
            }
            (None, _) => None,
        };
        let policy = chip::policy(
            &mut errors,
            input.required_checks.as_deref(),
            input.require_clone_detection,
        );
        let evidence = match &input.chip {
            Some(chip) => self.check_chip(&mut errors, chip, document_type),
            None => None,
        };
        let (document_type, country, front, selfie) =
            errors.finish_with(|| Some((document_type?, country?, front?, selfie?)))?;
        // Only a request that passed every other check spends its challenge.
        let (chip, portrait) = match evidence {
            Some(evidence) => {
                let (result, portrait) = self
                    .prove_chip(requester, evidence, document_type, &policy)
                    .await?;
                (Some(result), portrait)
            }
            None => (None, None),
        };

        let now = self.now();
        let id: VerificationId = self.ports.ids.next();
        let key = |name: &str| format!("identity/{id}/{name}");
        let images = Images {
            front: key("front"),
            back: back.as_ref().map(|_| key("back")),
            selfie: key("selfie"),
            portrait: portrait.as_ref().map(|_| key("portrait")),
        };
        let verification = Verification {
            id: id.clone(),
            application_id: requester.application_id.clone(),
            environment: requester.environment,
            document_type,
            country,
            images,
            callback_url: requester.default_callback_url.clone(),
            policy,
            chip,
            created_at: now,
            outcome: None,
            attempts: 0,
            leased_until: None,
            version: 0,
        };
        let mut uploads = vec![
            (verification.images.front.clone(), front),
            (verification.images.selfie.clone(), selfie),
        ];
        if let (Some(key), Some(bytes)) = (&verification.images.back, back) {
            uploads.push((key.clone(), bytes));
        }
        if let (Some(key), Some(portrait)) = (&verification.images.portrait, portrait) {
            uploads.push((key.clone(), portrait.image));
        }
        self.store_with_images(&verification, uploads).await?;
        if let Some(nudge) = &self.ports.job_created {
            nudge.nudge();
        }
        Ok(verification)
    }

    /// A verification as its creator sees it; any other application or environment gets "not
    /// found".
    pub async fn get(
        &self,
        requester: &Requester,
        id: &str,
    ) -> Result<Verification, VerificationError> {
        let id = VerificationId::parse(id).map_err(|_| not_found())?;
        let verification = self.ports.store.find(&id).await?.ok_or_else(not_found)?;
        if verification.application_id != requester.application_id
            || verification.environment != requester.environment
        {
            return Err(not_found());
        }
        Ok(verification)
    }

    /// Liveness of one image, answered at once (nothing is stored, nothing counted); the same
    /// analysis for sandbox and live keys, the answer marked with which it was (CONTRACT §7).
    pub async fn liveness(
        &self,
        requester: &Requester,
        image: &str,
        challenge: Option<&str>,
    ) -> Result<LivenessAnswer, VerificationError> {
        let started = Instant::now();
        let mut errors = ValidationErrors::new();
        if let Some(challenge) = challenge
            && !CHALLENGES.contains(&challenge)
        {
            errors.push("challenge", "must be blink, smile or turn_head");
        }
        let image = self.check_image(&mut errors, "image", image).await?;
        errors.finish()?;
        let Some(image) = image else {
            return Err(VerificationError::Invalid(ValidationErrors::new()));
        };
        let signals = self.ports.images.liveness_signals(&image).await;
        let verdict = match &signals {
            Ok(signals) => match liveness::judge_signals(signals) {
                Some(verdict) => verdict,
                // Only a clean frame without a cue is worth the face detector's time.
                None => liveness::judge_clean_frame(signals, &self.face_in(&image).await),
            },
            Err(error) => LivenessVerdict::not_measured(error.to_string()),
        };
        Ok(LivenessAnswer {
            verdict,
            signals: signals.ok(),
            challenge: challenge.map(str::to_owned),
            sandbox: requester.environment == Environment::Sandbox,
            processing_time: started.elapsed(),
        })
    }

    async fn face_in(&self, image: &[u8]) -> FacePresence {
        match self.ports.faces.find_face(image).await {
            Ok(true) => FacePresence::Found,
            Ok(false) => FacePresence::NotFound,
            Err(error) => FacePresence::NotChecked(error.to_string()),
        }
    }

    /// Claims due analysis jobs and finishes them, each with `verification.completed` in the
    /// same transaction. Safe with several processes (each job is leased by one) and across
    /// restarts (a job whose worker died is taken again when its lease ends).
    pub async fn analyse_due(&self, limit: u32) -> Result<usize, VerificationError> {
        let now = self.now();
        let until = now.plus(self.settings.analysis_lease);
        let jobs = self.ports.store.claim_due(now, until, limit).await?;
        let mut finished = 0;
        for job in jobs {
            let outcome = if job.attempts > self.settings.max_attempts {
                self.abandoned(&job)
            } else {
                self.analyse(&job).await?
            };
            if self.finish(job, outcome).await? {
                finished += 1;
            }
        }
        Ok(finished)
    }

    async fn analyse(&self, job: &Verification) -> Result<Outcome, VerificationError> {
        let image = |key: &str| {
            let key = key.to_owned();
            async move {
                self.ports
                    .blobs
                    .get(&key)
                    .await
                    .map_err(unavailable)?
                    .ok_or_else(|| {
                        VerificationError::Unavailable(format!("image {key} is missing").into())
                    })
            }
        };
        let front = image(&job.images.front).await?;
        let selfie = image(&job.images.selfie).await?;
        let back = match &job.images.back {
            Some(key) => Some(image(key).await?),
            None => None,
        };
        let document = match (job.document_type, &back) {
            (DocumentType::DriversLicense, Some(back)) => {
                DocumentRead::Barcode(self.ports.barcodes.read_pdf417(back).await)
            }
            (DocumentType::DriversLicense, None) => DocumentRead::Barcode(Ok(None)),
            // An ID card's zone is on its back; a passport's on its data page.
            (_, Some(back)) => DocumentRead::Mrz(self.ports.mrz.read_mrz(back).await),
            (_, None) => DocumentRead::Mrz(self.ports.mrz.read_mrz(&front).await),
        };
        // A portrait the issuing state signed beats a photo of the document.
        let portrait = match &job.images.portrait {
            Some(key) => Some(image(key).await?),
            None => None,
        };
        let face = self
            .ports
            .faces
            .compare(portrait.as_deref().unwrap_or(&front), &selfie)
            .await;
        let liveness = self.ports.images.liveness_signals(&selfie).await;
        let mut models = self.ports.mrz.models();
        models.extend(self.ports.faces.models());
        let readings = Readings {
            document,
            face,
            liveness,
            models,
            chip: job.chip.clone(),
            face_from_chip: portrait.is_some(),
        };
        Ok(conclude(
            job.document_type,
            readings,
            &job.policy,
            self.now(),
        ))
    }

    /// A job that kept failing (its worker died each time) goes to a person, never silently.
    fn abandoned(&self, job: &Verification) -> Outcome {
        let checks = Checks {
            document_authenticity: CheckResult::Inconclusive,
            face_match: CheckResult::Inconclusive,
            liveness_detection: CheckResult::Inconclusive,
            data_extraction: Extraction::Failed,
        };
        Outcome {
            status: VerificationStatus::NeedsReview,
            confidence: confidence_of(&checks, None),
            checks,
            extracted_data: None,
            findings: vec![Finding::new(
                "dataExtraction",
                format!(
                    "analysis did not finish after {} attempts",
                    job.attempts.saturating_sub(1)
                ),
            )],
            face_distance: None,
            liveness_signals: None,
            models: Vec::new(),
            completed_at: self.now(),
        }
    }

    async fn finish(
        &self,
        mut job: Verification,
        outcome: Outcome,
    ) -> Result<bool, VerificationError> {
        let expected = job.version;
        job.outcome = Some(outcome);
        job.leased_until = None;
        job.version += 1;
        let urls: Vec<&str> = job.callback_url.as_deref().into_iter().collect();
        let event = Outbox::new(
            self.ports.ids.as_ref(),
            VERIFICATION_COMPLETED,
            job.application_id.clone(),
            job.environment,
            self.now(),
            StatusBody::of(&job),
            &urls,
        );
        let stored = self
            .ports
            .store
            .complete(&job, expected, &Effects::events(vec![event]))
            .await?;
        if stored {
            if let Some(nudge) = &self.ports.outbox_written {
                nudge.nudge();
            }
            self.forget_images(&job).await;
        }
        Ok(stored)
    }

    /// Base64 → bytes within the size limit → an image the analyzers can decode.
    async fn check_image(
        &self,
        errors: &mut ValidationErrors,
        field: &str,
        text: &str,
    ) -> Result<Option<Vec<u8>>, VerificationError> {
        let max = self.settings.max_image_bytes;
        if text.len() / 4 * 3 > max + 2 {
            return Err(VerificationError::TooLarge(max));
        }
        let data = text.trim();
        // A data URL's prefix is accepted: clients often send canvas output as is.
        let data = match data.split_once(";base64,") {
            Some((prefix, rest)) if prefix.starts_with("data:image/") => rest,
            _ => data,
        };
        let Ok(bytes) = BASE64.decode(data) else {
            errors.push(field, "must be base64 (standard alphabet, padded)");
            return Ok(None);
        };
        if bytes.len() > max {
            return Err(VerificationError::TooLarge(max));
        }
        match self.ports.images.inspect(&bytes).await {
            Ok(_) => Ok(Some(bytes)),
            Err(rejection) => {
                errors.push(field, rejection.to_string());
                Ok(None)
            }
        }
    }

    fn store_error(&self, error: StoreError) -> VerificationError {
        match error {
            StoreError::Quota(quota) => self.quota(quota),
            StoreError::DailyCapReached => VerificationError::SandboxCapReached {
                limit: self.settings.sandbox_daily_cap,
                retry_after_secs: until_next_utc_day(self.now()),
            },
            other => other.into(),
        }
    }

    fn quota(&self, quota: QuotaExceeded) -> VerificationError {
        VerificationError::QuotaExceeded {
            quota,
            retry_after_secs: quota.retry_after_secs(self.now()),
        }
    }
}

/// Seconds from `now` to the next midnight UTC (at least 1).
fn until_next_utc_day(now: Timestamp) -> u64 {
    const DAY_MS: i64 = 86_400_000;
    let millis = now.as_millis();
    let next = (millis.div_euclid(DAY_MS) + 1) * DAY_MS;
    u64::try_from((next - millis + 999) / 1000)
        .unwrap_or(1)
        .max(1)
}

fn not_found() -> VerificationError {
    VerificationError::NotFound("Verification not found")
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> VerificationError {
    VerificationError::Unavailable(Box::new(error))
}

impl From<AnalysisError> for VerificationError {
    fn from(error: AnalysisError) -> Self {
        unavailable(error)
    }
}
