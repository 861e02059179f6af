use crate::events::SIGNATURE_COMPLETED;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::id::{ApplicationId, SignatureRequestId, TypedId};
use idconsent_kernel::{
    BlobStore, Clock, DisplayText, EmailAddress, Environment, IdGenerator, Nudge, Timestamp,
    ValidationErrors, WebUrl,
};
use idconsent_notification::{Address, Invitations, Invitee, NewMessage, NotificationSender};
use idconsent_webhook::{Effects, Outbox};
use sha2::{Digest, Sha256};

use crate::error::SignatureError;
use crate::events::StatusBody;
use crate::model::{Evidence, RequestStatus, SignatureRequest, Signer, SignerStatus};
use crate::ports::{
    CertificateError, CertificateMaker, InspectError, PdfInspector, SignatureRepository,
};

pub const MAX_SIGNERS: usize = 20;
pub const DEFAULT_EXPIRES_IN_HOURS: u32 = 72;
pub const MAX_EXPIRES_IN_HOURS: u32 = 720;
/// How often a transition is recomputed when another one got in first. Every lost race is
/// another answer (or the expiry) that succeeded, and a request takes at most one per signer
/// plus the expiry, so this bound is never what refuses a legitimate answer.
const REPLACE_ATTEMPTS: usize = MAX_SIGNERS + 2;

#[derive(Debug, Clone)]
pub struct SignatureSettings {
    /// The largest decoded document accepted (20 MiB).
    pub max_document_bytes: usize,
    /// Whether callback URLs may target private or loopback hosts.
    pub allow_private_callbacks: bool,
    /// The hosted signing page (`IDC_SIGN_URL`, default `{base}/sign`); a request's page is
    /// `{sign_url}/{signatureRequestId}`.
    pub sign_url: String,
}

impl Default for SignatureSettings {
    fn default() -> Self {
        Self {
            max_document_bytes: 20 << 20,
            allow_private_callbacks: false,
            sign_url: "http://localhost:8080/sign".into(),
        }
    }
}

/// The application asking, as its signed request established it.
#[derive(Debug, Clone)]
pub struct Requester {
    pub application_id: ApplicationId,
    pub environment: Environment,
    /// The application's default callback URL, used when a request names none.
    pub default_callback_url: Option<String>,
}

/// A create request as received (spec §2.6).
#[derive(Debug, Clone, Default)]
pub struct CreateRequest {
    /// Base64 of the PDF.
    pub document: String,
    pub signers: Vec<SignerInput>,
    pub callback_url: Option<String>,
    /// The JSON number's text, in hours.
    pub expires_in: Option<String>,
    pub require_biometric: Option<bool>,
}

#[derive(Debug, Clone, Default)]
pub struct SignerInput {
    pub email: String,
    pub name: String,
}

/// Ports and settings of the signature domain.
#[derive(Debug, Clone)]
pub struct SignatureService {
    requests: Arc<dyn SignatureRepository>,
    documents: Arc<dyn BlobStore>,
    inspector: Arc<dyn PdfInspector>,
    certificates: Arc<dyn CertificateMaker>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    outbox_written: Option<Arc<dyn Nudge>>,
    notifications: Arc<dyn NotificationSender>,
    invitations: Arc<Invitations>,
    settings: SignatureSettings,
}

/// The ports a [`SignatureService`] works through.
#[derive(Debug, Clone)]
pub struct SignaturePorts {
    pub requests: Arc<dyn SignatureRepository>,
    pub documents: Arc<dyn BlobStore>,
    pub inspector: Arc<dyn PdfInspector>,
    pub certificates: Arc<dyn CertificateMaker>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub outbox_written: Option<Arc<dyn Nudge>>,
    /// Emails each signer the signing page's link.
    pub notifications: Arc<dyn NotificationSender>,
    /// Who a sandbox invitation may go to, and the send allowance it counts against.
    pub invitations: Arc<Invitations>,
}

impl SignatureService {
    pub fn new(ports: SignaturePorts, settings: SignatureSettings) -> Self {
        Self {
            requests: ports.requests,
            documents: ports.documents,
            inspector: ports.inspector,
            certificates: ports.certificates,
            clock: ports.clock,
            ids: ports.ids,
            outbox_written: ports.outbox_written,
            notifications: ports.notifications,
            invitations: ports.invitations,
            settings,
        }
    }

    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The hosted page where the request's signers sign.
    pub fn sign_url(&self, request: &SignatureRequest) -> String {
        format!(
            "{}/{}",
            self.settings.sign_url.trim_end_matches('/'),
            request.id
        )
    }

    /// Validates the upload and the signers, stores the document, then the pending request.
    pub async fn create(
        &self,
        requester: &Requester,
        input: CreateRequest,
    ) -> Result<SignatureRequest, SignatureError> {
        let live = requester.environment == Environment::Live;
        let mut errors = ValidationErrors::new();
        let document = self.check_document(&mut errors, &input.document).await?;
        let signers = check_signers(&mut errors, &input.signers);
        let expires_in = check_expires_in(&mut errors, input.expires_in.as_deref());
        let callback_url = match &input.callback_url {
            Some(url) => errors
                .check(
                    "callbackUrl",
                    WebUrl::parse(url).and_then(|url| {
                        url.check_target(live, self.settings.allow_private_callbacks)
                            .map(|()| url)
                    }),
                )
                .map(|url| Some(url.as_str().to_owned())),
            None => Some(requester.default_callback_url.clone()),
        };
        let (document, signers, expires_in, callback_url) =
            errors.finish_with(|| Some((document?, signers?, expires_in?, callback_url?)))?;
        let (bytes, pages) = document;
        // Every signer is invited: admitted (sandbox rules, send allowance) before anything is
        // stored or sent.
        let fields: Vec<String> = (0..signers.len())
            .map(|index| format!("signers[{index}].email"))
            .collect();
        let invitees: Vec<Invitee<'_>> = signers
            .iter()
            .zip(&fields)
            .map(|(signer, field)| Invitee {
                field,
                email: &signer.email,
            })
            .collect();
        self.invitations
            .admit(&requester.application_id, requester.environment, &invitees)
            .await?;

        let now = self.now();
        let mut request = SignatureRequest {
            id: self.ids.next(),
            application_id: requester.application_id.clone(),
            environment: requester.environment,
            document_sha256: hex::encode(Sha256::digest(&bytes)),
            document_size: bytes.len() as u64,
            document_pages: pages,
            signers,
            callback_url,
            require_biometric: input.require_biometric.unwrap_or(true),
            status: RequestStatus::Pending,
            created_at: now,
            expires_at: now.plus(Duration::from_secs(u64::from(expires_in) * 3600)),
            completed_at: None,
            audit: Vec::new(),
            version: 0,
        };
        request.record_creation();
        // The document first: a request is never stored without it; an orphaned blob after a
        // failed insert is harmless (its key names an id nobody holds).
        self.documents
            .put(&request.document_key(), bytes)
            .await
            .map_err(SignatureError::unavailable)?;
        self.requests.create(&request, &Effects::default()).await?;
        self.invite(&request).await;
        Ok(request)
    }

    /// Emails every signer the signing page's link. Best effort, after the request is stored:
    /// the merchant has the same `signUrl`, and failing the create after the write would make a
    /// retry store a second request.
    async fn invite(&self, request: &SignatureRequest) {
        let url = self.sign_url(request);
        for signer in &request.signers {
            let Ok(to) = Address::parse(signer.email.as_str()) else {
                continue;
            };
            let _ = self
                .notifications
                .send(NewMessage {
                    to,
                    subject: "A document awaits your signature".into(),
                    body: format!(
                        "{}, you are asked to sign a document ({} page(s)). Review and sign it \
                         before {}: {url}",
                        signer.name,
                        request.document_pages,
                        request.expires_at.to_rfc3339()
                    ),
                    code: None,
                    link: Some(url.clone()),
                })
                .await;
        }
    }

    /// Base64 → bytes within the size limit → a PDF the certificate maker can extend.
    #[allow(clippy::type_complexity)]
    async fn check_document(
        &self,
        errors: &mut ValidationErrors,
        document: &str,
    ) -> Result<Option<(Vec<u8>, u32)>, SignatureError> {
        // Base64 of n bytes is 4⌈n/3⌉ characters: refuse before decoding anything too large.
        let max = self.settings.max_document_bytes;
        if document.len() / 4 * 3 > max + 2 {
            return Err(SignatureError::TooLarge(max));
        }
        let Ok(bytes) = BASE64.decode(document.trim()) else {
            errors.push("document", "must be base64 (standard alphabet, padded)");
            return Ok(None);
        };
        if bytes.len() > max {
            return Err(SignatureError::TooLarge(max));
        }
        match self.inspector.inspect(&bytes).await {
            Ok(facts) => Ok(Some((bytes, facts.pages))),
            Err(InspectError::Rejected(rejection)) => {
                errors.push("document", rejection.to_string());
                Ok(None)
            }
            Err(InspectError::Busy { retry_after_secs }) => {
                Err(SignatureError::Busy { retry_after_secs })
            }
            Err(unavailable @ InspectError::Unavailable(_)) => {
                Err(SignatureError::unavailable(unavailable))
            }
        }
    }

    /// A request as its creator sees it; any other application or environment gets "not found".
    pub async fn get(
        &self,
        requester: &Requester,
        id: &str,
    ) -> Result<SignatureRequest, SignatureError> {
        let request = self.load(id).await?;
        if request.application_id != requester.application_id
            || request.environment != requester.environment
        {
            return Err(not_found());
        }
        Ok(request)
    }

    /// A request by id, for the hosted page and approvals (the id is the capability).
    pub async fn load(&self, id: &str) -> Result<SignatureRequest, SignatureError> {
        let id = SignatureRequestId::parse(id).map_err(|_| not_found())?;
        self.requests.find(&id).await?.ok_or_else(not_found)
    }

    /// The document as uploaded; [`SignatureError::DocumentMissing`] when the file store has
    /// none under the request's key.
    pub async fn document(&self, request: &SignatureRequest) -> Result<Vec<u8>, SignatureError> {
        self.documents
            .get(&request.document_key())
            .await
            .map_err(SignatureError::unavailable)?
            .ok_or(SignatureError::DocumentMissing)
    }

    /// The signed certificate of a completed request (409 before), made once and kept.
    pub async fn certificate(
        &self,
        requester: &Requester,
        id: &str,
    ) -> Result<(SignatureRequest, Vec<u8>), SignatureError> {
        let request = self.get(requester, id).await?;
        let status = request.status_at(self.now());
        if status != RequestStatus::Completed {
            return Err(SignatureError::Conflict(format!(
                "The certificate exists once every signer has signed; the request is {}",
                status.as_str()
            )));
        }
        let key = request.certificate_key();
        if let Some(pdf) = self
            .documents
            .get(&key)
            .await
            .map_err(SignatureError::unavailable)?
        {
            return Ok((request, pdf));
        }
        let original = self.document(&request).await?;
        let pdf = self
            .certificates
            .certify(&original, &request)
            .await
            .map_err(|error| match error {
                CertificateError::Busy { retry_after_secs } => {
                    SignatureError::Busy { retry_after_secs }
                }
                // The adapter logged why; the caller learns when to come back.
                CertificateError::TimestampPending {
                    retry_after_secs, ..
                } => SignatureError::CertificatePending { retry_after_secs },
                failed => SignatureError::unavailable(failed),
            })?;
        // Two first downloads may both make one; either is a valid certificate of the request.
        self.documents
            .put(&key, pdf.clone())
            .await
            .map_err(SignatureError::unavailable)?;
        Ok((request, pdf))
    }

    /// The sandbox helper: signs as `email` would, with a `mk_test_` key only; the audit trail
    /// says the helper did it.
    pub async fn sign_in_sandbox(
        &self,
        requester: &Requester,
        id: &str,
        email: &str,
    ) -> Result<SignatureRequest, SignatureError> {
        if requester.environment != Environment::Sandbox {
            return Err(SignatureError::Forbidden(
                "Sandbox helpers work only with mk_test_ keys",
            ));
        }
        let request = self.get(requester, id).await?;
        let email = EmailAddress::parse(email)
            .map_err(|error| ValidationErrors::single("email", error.to_string()))?;
        let evidence = Evidence {
            sandbox: true,
            ..Evidence::default()
        };
        self.answer(request, &email, &evidence, Answer::Sign, Effects::default())
            .await
    }

    /// A signer signs or declines (the hosted page, or an approval), with `also` in the same
    /// transaction. 409 when the request or the signer already answered; recomputed from a
    /// fresh read when another signer got in first.
    pub async fn answer(
        &self,
        mut request: SignatureRequest,
        email: &EmailAddress,
        evidence: &Evidence,
        answer: Answer,
        also: Effects,
    ) -> Result<SignatureRequest, SignatureError> {
        for _ in 0..REPLACE_ATTEMPTS {
            let loaded_version = request.version;
            let mut next = request.clone();
            let now = self.now();
            let completed = match answer {
                Answer::Sign => next.sign(email, evidence, now)?,
                Answer::Decline => {
                    next.decline(email, evidence, now)?;
                    false
                }
            };
            let mut effects = if completed {
                Effects::events(vec![self.completed_event(&next, now)])
            } else {
                Effects::default()
            };
            effects.extend(also.clone());
            if self
                .requests
                .replace(&next, loaded_version, &effects)
                .await?
            {
                if completed {
                    self.nudge();
                }
                return Ok(next);
            }
            request = self
                .requests
                .find(&request.id)
                .await?
                .ok_or_else(not_found)?;
        }
        Err(SignatureError::Conflict(
            "The request is changing too fast; try again".into(),
        ))
    }

    /// Records the expiry of every pending request whose time is up. Safe with several
    /// processes: each expiry is a compare-and-swap on the request's version.
    pub async fn expire_due(&self) -> Result<usize, SignatureError> {
        let now = self.now();
        let mut expired = 0;
        for mut request in self.requests.due_for_expiry(now, 200).await? {
            let loaded_version = request.version;
            if request.expire(now).is_ok()
                && self
                    .requests
                    .replace(&request, loaded_version, &Effects::default())
                    .await?
            {
                expired += 1;
            }
        }
        Ok(expired)
    }

    fn completed_event(&self, request: &SignatureRequest, now: Timestamp) -> Outbox {
        let urls: Vec<&str> = request.callback_url.as_deref().into_iter().collect();
        Outbox::new(
            self.ids.as_ref(),
            SIGNATURE_COMPLETED,
            request.application_id.clone(),
            request.environment,
            now,
            StatusBody::of(request, now),
            &urls,
        )
    }

    fn nudge(&self) {
        if let Some(nudge) = &self.outbox_written {
            nudge.nudge();
        }
    }
}

/// What a signer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Sign,
    Decline,
}

fn not_found() -> SignatureError {
    SignatureError::NotFound("Signature request not found")
}

fn check_signers(errors: &mut ValidationErrors, input: &[SignerInput]) -> Option<Vec<Signer>> {
    if input.is_empty() || input.len() > MAX_SIGNERS {
        errors.push("signers", format!("must name 1 to {MAX_SIGNERS} signers"));
        return None;
    }
    let mut seen = HashSet::new();
    let mut signers = Vec::with_capacity(input.len());
    for (index, signer) in input.iter().enumerate() {
        let email = errors.check(
            format!("signers[{index}].email"),
            EmailAddress::parse(&signer.email),
        );
        let name = errors.check(
            format!("signers[{index}].name"),
            DisplayText::parse(&signer.name, 200),
        );
        if let Some(email) = &email
            && !seen.insert(email.as_str().to_lowercase())
        {
            errors.push(
                format!("signers[{index}].email"),
                "must differ from every other signer's",
            );
        }
        if let (Some(email), Some(name)) = (email, name) {
            signers.push(Signer {
                email,
                name: name.into_string(),
                status: SignerStatus::AwaitingSignature,
                decided_at: None,
                ip_address: None,
                biometric_verified: false,
            });
        }
    }
    (signers.len() == input.len()).then_some(signers)
}

fn check_expires_in(errors: &mut ValidationErrors, text: Option<&str>) -> Option<u32> {
    let Some(text) = text else {
        return Some(DEFAULT_EXPIRES_IN_HOURS);
    };
    match text.parse::<u32>() {
        Ok(hours) if (1..=MAX_EXPIRES_IN_HOURS).contains(&hours) => Some(hours),
        _ => {
            errors.push(
                "expiresIn",
                format!("must be a whole number of hours from 1 to {MAX_EXPIRES_IN_HOURS}"),
            );
            None
        }
    }
}
