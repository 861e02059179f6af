//! The end-user use cases: enroll, register a passkey, authenticate for a purpose, approve,
//! app tokens and devices.

use std::sync::Arc;
use std::time::Duration;

use idconsent_approval::{ApprovalRegistry, ApprovedVia, Approver, Decision, Effects, TargetError};
use idconsent_kernel::id::{ChallengeId, DeviceId, EndUserId, EnrollmentId, TypedId};
use idconsent_kernel::{
    Clock, DisplayText, IdGenerator, KeyedHash, Metering, Metric, Nudge, PhoneNumber, RandomSource,
    Timestamp, ValidationErrors,
};
use idconsent_notification::{Address, NewMessage, NotificationSender};
use idconsent_webhook::{DeliveryStore, EventType, Outbox};
use serde::Serialize;
use serde_json::Value;

use crate::commitment::{context_hash, derive_challenge};
use crate::context::{EnrollmentContext, LoginContext};
use crate::error::EndUserError;
use crate::events::{AuthEventData, EnrollmentCompleted};
use crate::model::{
    Audience, Challenge, Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus, Purpose,
    PurposeKind, RefreshToken,
};
use crate::ports::{
    AccessClaims, AccessTokens, Admitted, ChallengeRepository, DeviceRepository,
    EnrollmentRepository, NextToken, PasskeyCeremony, PasskeyError, RefreshTokenRepository,
    Rotation, Spent, StoredPasskey,
};

const OTP_PURPOSE: &str = "enrollment-otp";
const REFRESH_PURPOSE: &str = "app-refresh-token";

/// Lifetimes and limits (CONTRACT §2.4 and §3).
#[derive(Debug, Clone)]
pub struct EndUserSettings {
    pub otp_ttl: Duration,
    pub otp_attempts: u32,
    /// SMS flood guard: at most this many enrollments per phone per `enrollment_window`.
    pub enrollments_per_window: u32,
    pub enrollment_window: Duration,
    pub challenge_ttl: Duration,
    pub access_ttl: Duration,
    pub refresh_ttl: Duration,
    /// How long a recovery waits before a new device of a phone whose user has no device to
    /// approve it with becomes active (ADR 0013); the user can reject it meanwhile.
    pub recovery_cooling_off: Duration,
}

impl Default for EndUserSettings {
    fn default() -> Self {
        Self {
            otp_ttl: Duration::from_secs(600),
            otp_attempts: 5,
            enrollments_per_window: 5,
            enrollment_window: Duration::from_secs(3600),
            challenge_ttl: Duration::from_secs(120),
            access_ttl: Duration::from_secs(900),
            refresh_ttl: Duration::from_secs(30 * 24 * 3600),
            recovery_cooling_off: Duration::from_secs(72 * 3600),
        }
    }
}

/// Everything the service needs from the outside.
#[derive(Debug, Clone)]
pub struct EndUserPorts {
    pub enrollments: Arc<dyn EnrollmentRepository>,
    pub devices: Arc<dyn DeviceRepository>,
    pub challenges: Arc<dyn ChallengeRepository>,
    pub refresh_tokens: Arc<dyn RefreshTokenRepository>,
    pub passkeys: Arc<dyn PasskeyCeremony>,
    pub access_tokens: Arc<dyn AccessTokens>,
    /// The objects purposes name (consents, mandates, signatures …), by purpose kind.
    pub approvals: Arc<ApprovalRegistry>,
    /// What a successful assertion for an object costs its merchant (`authentications`).
    pub metering: Arc<dyn Metering>,
    pub notifications: Arc<dyn NotificationSender>,
    /// For events written outside another transaction (auth.failed).
    pub events: Arc<dyn DeliveryStore>,
    pub hasher: Arc<dyn KeyedHash>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub random: Arc<dyn RandomSource>,
    /// Wakes the webhook worker after events are written.
    pub outbox_written: Option<Arc<dyn Nudge>>,
}

/// `POST /v1/enrollments`.
#[derive(Debug, Clone, Default)]
pub struct EnrollRequest {
    pub phone: String,
    pub name: Option<String>,
    pub device_name: Option<String>,
    pub platform: Option<String>,
}

/// A started assertion: what the app passes to the authenticator and shows the user.
#[derive(Debug, Clone)]
pub struct AuthenticationStart {
    pub challenge_id: ChallengeId,
    pub options: Value,
    pub context: Value,
    pub context_hash: String,
    pub nonce: String,
}

/// What `authenticate/complete` did.
#[derive(Debug, Clone)]
pub struct Completed {
    pub purpose: Purpose,
    /// The object's status afterwards (`approved`, `rejected`, `completed`, `authenticated`).
    pub status: String,
}

/// An access and refresh token pair.
#[derive(Debug, Clone)]
pub struct TokenPair {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: u64,
}

/// A verified assertion: its challenge, the device that made it and its user.
#[derive(Debug)]
struct Asserted {
    challenge: Challenge,
    device: Device,
    user: EndUser,
}

#[derive(Debug, Clone)]
pub struct EndUserService {
    pub(crate) ports: EndUserPorts,
    pub(crate) settings: EndUserSettings,
}

impl EndUserService {
    pub fn new(ports: EndUserPorts, settings: EndUserSettings) -> Self {
        Self { ports, settings }
    }

    pub fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// Starts an enrollment and texts its 6-digit code.
    pub async fn enroll(
        &self,
        request: EnrollRequest,
        installation: &str,
        audience: Option<Audience>,
    ) -> Result<Enrollment, EndUserError> {
        let mut errors = ValidationErrors::new();
        let phone = errors.check("phone", PhoneNumber::parse(&request.phone));
        // Shown on other devices' approval prompts: no control, text-direction or invisible
        // characters.
        let mut shown = |field: &str, value: Option<String>, max: usize| {
            errors
                .check(field, DisplayText::parse_optional(value.as_deref(), max))
                .flatten()
                .map(DisplayText::into_string)
        };
        let name = shown("name", request.name, 100);
        let device_name = shown("deviceName", request.device_name, 100);
        let platform = shown("platform", request.platform, 40);
        let phone = errors.finish_with(|| phone)?;
        let installation = check_installation(installation)?;

        let now = self.now();
        let code = self.ports.random.digits(6);
        let id: EnrollmentId = self.ports.ids.next();
        let enrollment = Enrollment {
            otp_hash: self.otp_hash(&id, &code),
            id,
            phone,
            name,
            device_name,
            platform,
            installation: installation.to_owned(),
            audience,
            status: EnrollmentStatus::PendingOtp,
            otp_attempts_left: self.settings.otp_attempts,
            otp_expires_at: now.plus(self.settings.otp_ttl),
            device_id: None,
            created_at: now,
            updated_at: now,
        };
        // Every enrollment texts the phone: bound what anyone can make us send to one number,
        // counted where the enrollment is written.
        match self
            .ports
            .enrollments
            .insert_within(
                &enrollment,
                self.settings.enrollments_per_window,
                self.settings.enrollment_window,
            )
            .await?
        {
            Admitted::Inserted => {}
            Admitted::Refused { retry_at } => {
                return Err(EndUserError::RateLimited {
                    message: "Too many enrollments for this phone; try again later",
                    retry_after_secs: retry_at.since(now).as_secs().max(1),
                });
            }
        }
        let to = Address::parse(enrollment.phone.as_str())
            .map_err(|_| EndUserError::Unavailable("phone is not an SMS address".into()))?;
        self.ports
            .notifications
            .send(NewMessage {
                to,
                subject: "idconsent enrollment code".into(),
                body: format!(
                    "Your idconsent code is {code}. It expires in {} minutes. Never share it.",
                    self.settings.otp_ttl.as_secs() / 60
                ),
                code: Some(code),
                link: None,
            })
            .await
            .map_err(|error| EndUserError::Unavailable(Box::new(error)))?;
        Ok(enrollment)
    }

    pub async fn enrollment(&self, id: &str) -> Result<Enrollment, EndUserError> {
        let id = EnrollmentId::parse(id).map_err(|_| ENROLLMENT_NOT_FOUND)?;
        self.ports
            .enrollments
            .find(&id)
            .await?
            .ok_or(ENROLLMENT_NOT_FOUND)
    }

    /// Checks the SMS code and starts a passkey registration.
    pub async fn register_begin(
        &self,
        enrollment_id: &str,
        code: &str,
    ) -> Result<(ChallengeId, Value), EndUserError> {
        let enrollment = self.enrollment(enrollment_id).await?;
        let now = self.now();
        match enrollment.status {
            EnrollmentStatus::PendingOtp => {}
            EnrollmentStatus::Failed => return Err(NO_ATTEMPTS_LEFT),
            other => {
                return Err(EndUserError::Conflict(format!(
                    "The enrollment is already {}",
                    other.as_str()
                )));
            }
        }
        if now >= enrollment.otp_expires_at {
            return Err(INVALID_CODE);
        }
        // The attempt is taken before the code is compared, in one conditional update: a burst
        // of guesses gets no more comparisons than the attempts left, whatever their timing.
        let Some(taken) = self
            .ports
            .enrollments
            .take_otp_attempt(&enrollment.id, now)
            .await?
        else {
            return Err(NO_ATTEMPTS_LEFT);
        };
        let presented = self.otp_hash(&enrollment.id, code.trim());
        if !constant_time_eq(presented.as_bytes(), enrollment.otp_hash.as_bytes()) {
            if taken.otp_attempts_left == 0 {
                self.ports.enrollments.fail(&enrollment.id, now).await?;
            }
            return Err(INVALID_CODE);
        }
        let user = self
            .ports
            .enrollments
            .ensure_user(&EndUser {
                id: self.ports.ids.next(),
                phone: enrollment.phone.clone(),
                handle: self.ports.random.hex(16),
                name: enrollment.name.clone(),
                enrolled_at: None,
                created_at: now,
            })
            .await?;
        let existing: Vec<String> = self
            .ports
            .devices
            .of_user(&user.id)
            .await?
            .into_iter()
            .filter(|device| device.status != DeviceStatus::Deregistered)
            .map(|device| device.credential_id)
            .collect();
        let display = user.name.clone().unwrap_or_else(|| user.phone.masked());
        let started = self.ports.passkeys.start_registration(
            &user.handle,
            user.phone.as_str(),
            &display,
            &existing,
        )?;
        let challenge = Challenge {
            id: self.ports.ids.next(),
            purpose: Purpose {
                kind: PurposeKind::Registration,
                id: Some(enrollment.id.to_string()),
            },
            phone: enrollment.phone.clone(),
            enrollment_id: Some(enrollment.id.clone()),
            state: started.state,
            context_hash: None,
            expires_at: now.plus(self.settings.challenge_ttl),
            used_at: None,
            created_at: now,
        };
        self.ports.challenges.insert(&challenge).await?;
        Ok((challenge.id, started.options))
    }

    /// Verifies the attestation and registers the device (event `device.registered`).
    pub async fn register_complete(
        &self,
        challenge_id: &str,
        credential: &Value,
        installation: Option<&str>,
    ) -> Result<Device, EndUserError> {
        let now = self.now();
        let challenge = self
            .find_challenge(challenge_id)
            .await?
            .filter(|challenge| challenge.purpose.kind == PurposeKind::Registration)
            .ok_or(INVALID_CHALLENGE)?;
        let passkey = self
            .ports
            .passkeys
            .finish_registration(&challenge.state, credential)?;
        if challenge.used_at.is_some() || now >= challenge.expires_at {
            return Err(INVALID_CHALLENGE);
        }
        let enrollment_id = challenge.enrollment_id.clone().ok_or(INVALID_CHALLENGE)?;
        let enrollment = self.enrollment(enrollment_id.as_str()).await?;
        let user = self
            .ports
            .enrollments
            .user_by_phone(&enrollment.phone)
            .await?
            .ok_or(INVALID_CHALLENGE)?;
        if !self.ports.challenges.consume(&challenge.id, now).await? {
            return Err(INVALID_CHALLENGE);
        }
        let device = Device {
            id: self.ports.ids.next(),
            user_id: user.id.clone(),
            name: enrollment
                .device_name
                .clone()
                .unwrap_or_else(|| "Passkey".into()),
            platform: enrollment
                .platform
                .clone()
                .unwrap_or_else(|| "unknown".into()),
            // The enrolling installation, unless the app names itself again.
            installation: match installation {
                Some(installation) => check_installation(installation)?.to_owned(),
                None => enrollment.installation.clone(),
            },
            audience: enrollment.audience.clone(),
            // Judged again in the registration's transaction (`register_device`).
            status: DeviceStatus::Pending,
            credential_id: passkey.credential_id,
            passkey: passkey.passkey,
            counter: passkey.counter,
            created_at: now,
            last_used_at: None,
            recovery_ends_at: None,
        };
        self.register_device(device, &enrollment, &user).await
    }

    /// Starts an assertion for a purpose; the challenge commits to the context returned.
    pub async fn authenticate_begin(
        &self,
        phone: &str,
        purpose_type: &str,
        purpose_id: Option<String>,
    ) -> Result<AuthenticationStart, EndUserError> {
        let mut errors = ValidationErrors::new();
        let phone = errors.check("phone", PhoneNumber::parse(phone));
        let kind = PurposeKind::parse(purpose_type).filter(|k| *k != PurposeKind::Registration);
        if kind.is_none() {
            errors.push(
                "purpose.type",
                "must be login, enrollment, consent, mandate, signature or device_add",
            );
        }
        let needs_id = kind.is_some_and(|k| k != PurposeKind::Login);
        let purpose_id = purpose_id.filter(|id| !id.trim().is_empty());
        if needs_id && purpose_id.is_none() {
            errors.push("purpose.id", "is required for this purpose");
        }
        let (phone, kind) = errors.finish_with(|| Some((phone?, kind?)))?;
        let purpose = Purpose {
            kind,
            id: if kind == PurposeKind::Login {
                None
            } else {
                purpose_id
            },
        };

        let user = self
            .ports
            .enrollments
            .user_by_phone(&phone)
            .await?
            .ok_or(NOT_ENROLLED)?;
        // An enrollment is proven with its own new passkey, whatever state that device is in
        // (a pending one is told why it cannot finish yet); every other purpose with an active
        // device of the user.
        let mut enrollment_device: Option<DeviceId> = None;
        let context =
            match kind {
                PurposeKind::Enrollment => {
                    let enrollment = self
                        .enrollment(purpose.id.as_deref().unwrap_or_default())
                        .await?;
                    if enrollment.phone != phone {
                        return Err(ENROLLMENT_NOT_FOUND);
                    }
                    if enrollment.status != EnrollmentStatus::PasskeyRegistered {
                        return Err(EndUserError::Conflict(format!(
                            "The enrollment is {}",
                            enrollment.status.as_str()
                        )));
                    }
                    enrollment_device = enrollment.device_id.clone();
                    context_value(EnrollmentContext::new(&enrollment.id, phone.as_str()))?
                }
                _ if user.enrolled_at.is_none() => return Err(NOT_ENROLLED),
                PurposeKind::Login => context_value(LoginContext::new(phone.as_str()))?,
                _ => {
                    let target = self.ports.approvals.describe(&purpose).await.map_err(
                        |error| match error {
                            TargetError::NotFound => TARGET_NOT_FOUND,
                            other => other.into(),
                        },
                    )?;
                    // Someone else's object is as invisible as one that does not exist; so is one
                    // addressed to an email (decided on a hosted page, never in the app).
                    if target.recipient.phone() != Some(&phone) {
                        return Err(TARGET_NOT_FOUND);
                    }
                    target.context
                }
            };
        let devices = self.ports.devices.of_user(&user.id).await?;
        let passkeys: Vec<StoredPasskey<'_>> = devices
            .iter()
            .filter(|device| match &enrollment_device {
                Some(id) => {
                    &device.id == id
                        && matches!(device.status, DeviceStatus::Active | DeviceStatus::Pending)
                }
                None => device.status == DeviceStatus::Active,
            })
            .map(|device| StoredPasskey {
                passkey: &device.passkey,
                counter: device.counter,
            })
            .collect();
        if passkeys.is_empty() {
            return Err(EndUserError::NotFound("No active device for this phone"));
        }

        let now = self.now();
        let hash = context_hash(&context);
        let nonce: [u8; 32] = self.ports.random.bytes();
        let started = self
            .ports
            .passkeys
            .start_authentication(&passkeys, derive_challenge(&nonce, &hash))?;
        let challenge = Challenge {
            id: self.ports.ids.next(),
            purpose,
            phone,
            enrollment_id: None,
            state: started.state,
            context_hash: Some(hex::encode(hash)),
            expires_at: now.plus(self.settings.challenge_ttl),
            used_at: None,
            created_at: now,
        };
        self.ports.challenges.insert(&challenge).await?;
        Ok(AuthenticationStart {
            challenge_id: challenge.id,
            options: started.options,
            context,
            context_hash: hex::encode(hash),
            nonce: hex::encode(nonce),
        })
    }

    /// `authenticate/complete`: verifies the assertion, then applies `approve` to the object
    /// its purpose names (or completes the enrollment, or just authenticates for `login`).
    pub async fn authenticate_complete(
        &self,
        challenge_id: &str,
        credential: &Value,
        approve: bool,
    ) -> Result<Completed, EndUserError> {
        let asserted = self.assert(challenge_id, credential, None).await?;
        let purpose = asserted.challenge.purpose.clone();
        let status = match purpose.kind {
            PurposeKind::Login => "authenticated".to_owned(),
            PurposeKind::Enrollment => {
                self.complete_enrollment(&asserted).await?;
                EnrollmentStatus::Completed.as_str().to_owned()
            }
            _ => {
                let decision = if approve {
                    Decision::Approve
                } else {
                    Decision::Reject
                };
                self.decide(&asserted, decision).await?
            }
        };
        Ok(Completed { purpose, status })
    }

    /// Applies a verified assertion's decision to the object its purpose names, with
    /// `auth.success` and the authentication it costs in the same transaction.
    async fn decide(
        &self,
        asserted: &Asserted,
        decision: Decision,
    ) -> Result<String, EndUserError> {
        let purpose = &asserted.challenge.purpose;
        let now = self.now();
        // The charge needs the object's application before the decision's transaction starts.
        let charge = match self.ports.approvals.audience(purpose).await? {
            Some(audience) => self
                .ports
                .metering
                .charge(
                    &audience.application_id,
                    audience.environment,
                    Metric::Authentications,
                    now,
                )
                .await
                .map_err(|error| EndUserError::Unavailable(Box::new(error)))?,
            None => None,
        };
        let data = auth_data(&asserted.challenge, Some(&asserted.device.id), None);
        let also = |audience: &idconsent_approval::Audience| Effects {
            outbox: self.event(Some(audience), EventType::AuthSuccess, &data),
            charges: charge.iter().cloned().collect(),
        };
        let approver = Approver {
            via: ApprovedVia::Device {
                device_id: asserted.device.id.clone(),
                phone: asserted.user.phone.clone(),
            },
            context_hash: asserted.challenge.context_hash.clone(),
        };
        let status = self
            .ports
            .approvals
            .decide(purpose, decision, &approver, &also)
            .await
            .map_err(|error| match error {
                TargetError::Quota(quota) => EndUserError::QuotaExceeded {
                    quota,
                    retry_after_secs: quota.retry_after_secs(now),
                },
                other => other.into(),
            })?;
        if let Some(nudge) = &self.ports.outbox_written {
            nudge.nudge();
        }
        Ok(status)
    }

    /// `POST /v1/enrollments/:id/verify`: an assertion with purpose `enrollment` for this one.
    pub async fn verify_enrollment(
        &self,
        enrollment_id: &str,
        challenge_id: &str,
        credential: &Value,
    ) -> Result<Enrollment, EndUserError> {
        let expected = Purpose {
            kind: PurposeKind::Enrollment,
            id: Some(enrollment_id.to_owned()),
        };
        let asserted = self
            .assert(challenge_id, credential, Some(&expected))
            .await?;
        self.complete_enrollment(&asserted).await?;
        self.enrollment(enrollment_id).await
    }

    /// `POST /v6/auth/login`: an assertion with purpose `login` buys a token pair bound to
    /// `installation`.
    pub async fn login(
        &self,
        challenge_id: &str,
        credential: &Value,
        installation: &str,
    ) -> Result<TokenPair, EndUserError> {
        let installation = check_installation(installation)?;
        let login = Purpose {
            kind: PurposeKind::Login,
            id: None,
        };
        let asserted = self.assert(challenge_id, credential, Some(&login)).await?;
        let now = self.now();
        let refresh_token = self.new_refresh_token();
        let record = RefreshToken {
            hash: self.refresh_hash(&refresh_token),
            family: self.ports.ids.next(),
            user_id: asserted.user.id.clone(),
            device_id: asserted.device.id.clone(),
            installation: installation.to_owned(),
            expires_at: now.plus(self.settings.refresh_ttl),
            used_at: None,
            revoked_at: None,
            created_at: now,
        };
        self.ports.refresh_tokens.insert(&record).await?;
        self.token_pair(&record, refresh_token, now)
    }

    /// `POST /v6/auth/refresh`: rotates the refresh token; a reused one revokes its family.
    pub async fn refresh(
        &self,
        refresh_token: &str,
        installation: &str,
    ) -> Result<TokenPair, EndUserError> {
        let installation = check_installation(installation)?;
        let now = self.now();
        let next_token = self.new_refresh_token();
        let next = NextToken {
            hash: self.refresh_hash(&next_token),
            installation: installation.to_owned(),
            expires_at: now.plus(self.settings.refresh_ttl),
        };
        let presented = self.refresh_hash(refresh_token.trim());
        match self
            .ports
            .refresh_tokens
            .rotate(&presented, &next, now)
            .await?
        {
            Rotation::Rotated(stored) => self.token_pair(&stored, next_token, now),
            Rotation::Reused(_) => Err(EndUserError::Unauthorized(
                "Refresh token was already used; every session of this sign-in is revoked",
            )),
            Rotation::Invalid => Err(EndUserError::Unauthorized("Invalid refresh token")),
        }
    }

    /// Checks an app access token: signature, expiry, the `X-Device-ID` it was issued for,
    /// that its device is still active and that its sign-in (refresh family) was not revoked —
    /// a reused refresh token stops the access tokens of its family at once, not at expiry.
    pub async fn authorize(
        &self,
        access_token: &str,
        installation: &str,
    ) -> Result<AccessClaims, EndUserError> {
        let claims = self
            .ports
            .access_tokens
            .verify(access_token, self.now())
            .map_err(|_| INVALID_TOKEN)?;
        if claims.installation != installation {
            return Err(INVALID_TOKEN);
        }
        let device = self.ports.devices.find(&claims.device).await?;
        if !device.is_some_and(|d| d.status == DeviceStatus::Active && d.user_id == claims.user) {
            return Err(INVALID_TOKEN);
        }
        if self
            .ports
            .refresh_tokens
            .family_revoked(&claims.family)
            .await?
        {
            return Err(INVALID_TOKEN);
        }
        Ok(claims)
    }

    /// Deletes challenges expired for more than a day (kept that long for support questions).
    pub async fn forget_expired_challenges(&self) -> Result<usize, EndUserError> {
        let before = self.now().minus(Duration::from_secs(24 * 3600));
        Ok(self.ports.challenges.forget_expired(before).await?)
    }

    /// The phone number behind an access token's user.
    pub async fn user(&self, id: &EndUserId) -> Result<EndUser, EndUserError> {
        self.ports
            .enrollments
            .user(id)
            .await?
            .ok_or(EndUserError::Unauthorized("Invalid or expired token"))
    }

    /// Verifies an assertion against its challenge and spends the challenge. Every refusal
    /// after the challenge is known is reported as `auth.failed` to the purpose's audience.
    ///
    /// One read (challenge, device, user) and one write (challenge spent with the device's
    /// counter) around the verification.
    async fn assert(
        &self,
        challenge_id: &str,
        credential: &Value,
        expected: Option<&Purpose>,
    ) -> Result<Asserted, EndUserError> {
        let challenge_id = ChallengeId::parse(challenge_id).map_err(|_| INVALID_CHALLENGE)?;
        // Which credential the assertion claims (nothing verified yet), so that the device is
        // read with the challenge.
        let credential_id = self.ports.passkeys.asserted_credential_id(credential);
        let inputs = self
            .ports
            .challenges
            .read_assertion(&challenge_id, credential_id.as_deref().ok())
            .await?;
        let challenge = inputs
            .challenge
            .filter(|challenge| challenge.purpose.kind != PurposeKind::Registration)
            .ok_or(INVALID_CHALLENGE)?;
        let claimed = Claimed {
            credential_id,
            device: inputs.device,
            user: inputs.user,
        };
        match self.verify(&challenge, claimed, credential, expected).await {
            Ok(asserted) => Ok(asserted),
            Err(Refusal { error, device }) => {
                if matches!(
                    error,
                    EndUserError::Unauthorized(_) | EndUserError::BadRequest(_)
                ) {
                    self.report_failure(&challenge, device.as_ref(), &error)
                        .await;
                }
                Err(error)
            }
        }
    }

    async fn verify(
        &self,
        challenge: &Challenge,
        claimed: Claimed,
        credential: &Value,
        expected: Option<&Purpose>,
    ) -> Result<Asserted, Refusal> {
        let credential_id = claimed.credential_id?;
        let device = claimed
            .device
            .filter(|device| device.credential_id == credential_id)
            .ok_or(Refusal::from(UNKNOWN_PASSKEY))?;
        let with_device = |error: EndUserError| Refusal {
            error,
            device: Some(device.id.clone()),
        };
        // The assertion is checked first: a bad signature is reported as such even on a
        // reused challenge.
        let verified = self
            .ports
            .passkeys
            .finish_authentication(&challenge.state, credential)
            .map_err(|error| with_device(error.into()))?;
        if verified.credential_id != device.credential_id {
            return Err(with_device(UNKNOWN_PASSKEY));
        }
        let now = self.now();
        if challenge.used_at.is_some() || now >= challenge.expires_at {
            return Err(with_device(INVALID_CHALLENGE));
        }
        if expected.is_some_and(|purpose| purpose != &challenge.purpose) {
            return Err(with_device(EndUserError::Unauthorized(
                "The challenge was issued for another purpose",
            )));
        }
        if device.status == DeviceStatus::Pending {
            return Err(with_device(DEVICE_PENDING));
        }
        if device.status != DeviceStatus::Active {
            return Err(with_device(DEVICE_INACTIVE));
        }
        let user = claimed
            .user
            .filter(|user| user.id == device.user_id && user.phone == challenge.phone)
            .ok_or_else(|| with_device(UNKNOWN_PASSKEY))?;
        match self
            .ports
            .challenges
            .spend_assertion(&challenge.id, &device.id, verified.counter, now)
            .await
            .map_err(|error| with_device(error.into()))?
        {
            Spent::Spent => {}
            Spent::ChallengeUnusable => return Err(with_device(INVALID_CHALLENGE)),
            // Inactive since it was read, or a concurrent assertion stored a counter at least
            // as high as this one's.
            Spent::DeviceRefused => {
                return Err(with_device(EndUserError::Unauthorized(
                    "This device is blocked or deregistered, or its signature counter did not advance",
                )));
            }
        }
        Ok(Asserted {
            challenge: challenge.clone(),
            device: Device {
                counter: verified.counter,
                last_used_at: Some(now),
                ..device
            },
            user,
        })
    }

    async fn complete_enrollment(&self, asserted: &Asserted) -> Result<(), EndUserError> {
        let enrollment = self
            .enrollment(asserted.challenge.purpose.id.as_deref().unwrap_or_default())
            .await?;
        // Only the enrollment's own passkey proves it.
        if enrollment.device_id.as_ref() != Some(&asserted.device.id) {
            return Err(UNKNOWN_PASSKEY);
        }
        let now = self.now();
        let mut outbox = self.event(
            enrollment.audience.as_ref(),
            EventType::EnrollmentCompleted,
            EnrollmentCompleted {
                enrollment_id: &enrollment.id,
                phone: enrollment.phone.as_str(),
                device_id: &asserted.device.id,
                status: EnrollmentStatus::Completed.as_str(),
                completed_at: now,
            },
        );
        outbox.extend(self.event(
            enrollment.audience.as_ref(),
            EventType::AuthSuccess,
            auth_data(&asserted.challenge, Some(&asserted.device.id), None),
        ));
        if !self
            .ports
            .enrollments
            .complete(&enrollment.id, &asserted.user.id, now, &outbox)
            .await?
        {
            return Err(EndUserError::Conflict(format!(
                "The enrollment is {}",
                enrollment.status.as_str()
            )));
        }
        self.nudge(&outbox);
        Ok(())
    }

    /// Best effort: a failure to record `auth.failed` must not hide the refusal itself.
    async fn report_failure(
        &self,
        challenge: &Challenge,
        device: Option<&DeviceId>,
        error: &EndUserError,
    ) {
        let audience = self.audience_of(&challenge.purpose).await;
        let outbox = self.event(
            audience.as_ref(),
            EventType::AuthFailed,
            auth_data(challenge, device, Some(&error.to_string())),
        );
        if outbox.is_empty() {
            return;
        }
        if self.ports.events.enqueue(&outbox).await.is_ok() {
            self.nudge(&outbox);
        }
    }

    /// Who hears about assertions for a purpose: the object's application, if any.
    async fn audience_of(&self, purpose: &Purpose) -> Option<Audience> {
        match purpose.kind {
            PurposeKind::Registration | PurposeKind::Login => None,
            PurposeKind::Enrollment => {
                let id = EnrollmentId::parse(purpose.id.as_deref()?).ok()?;
                self.ports.enrollments.find(&id).await.ok()??.audience
            }
            _ => self.ports.approvals.audience(purpose).await.ok()?,
        }
    }

    pub(crate) fn event(
        &self,
        audience: Option<&Audience>,
        event_type: EventType,
        data: impl Serialize,
    ) -> Vec<Outbox> {
        let Some(audience) = audience else {
            return Vec::new();
        };
        vec![Outbox::new(
            self.ports.ids.as_ref(),
            event_type,
            audience.application_id.clone(),
            audience.environment,
            self.now(),
            data,
            &[&audience.callback_url],
        )]
    }

    pub(crate) fn nudge(&self, outbox: &[Outbox]) {
        if let (false, Some(nudge)) = (outbox.is_empty(), &self.ports.outbox_written) {
            nudge.nudge();
        }
    }

    async fn find_challenge(&self, id: &str) -> Result<Option<Challenge>, EndUserError> {
        let Ok(id) = ChallengeId::parse(id) else {
            return Ok(None);
        };
        Ok(self.ports.challenges.find(&id).await?)
    }

    fn token_pair(
        &self,
        record: &RefreshToken,
        refresh_token: String,
        now: Timestamp,
    ) -> Result<TokenPair, EndUserError> {
        let access_token = self
            .ports
            .access_tokens
            .issue(&AccessClaims {
                user: record.user_id.clone(),
                device: record.device_id.clone(),
                family: record.family.clone(),
                installation: record.installation.clone(),
                issued_at: now,
                expires_at: now.plus(self.settings.access_ttl),
            })
            .map_err(|error| EndUserError::Unavailable(Box::new(error)))?;
        Ok(TokenPair {
            access_token,
            refresh_token,
            expires_in: self.settings.access_ttl.as_secs(),
        })
    }

    fn new_refresh_token(&self) -> String {
        format!("rt_{}", self.ports.random.hex(32))
    }

    fn refresh_hash(&self, token: &str) -> String {
        self.ports.hasher.hex(REFRESH_PURPOSE, token.as_bytes())
    }

    fn otp_hash(&self, enrollment: &EnrollmentId, code: &str) -> String {
        self.ports
            .hasher
            .hex(OTP_PURPOSE, format!("{enrollment}:{code}").as_bytes())
    }
}

/// What the assertion claims and what storage has for it, before anything is verified.
#[derive(Debug)]
struct Claimed {
    credential_id: Result<String, PasskeyError>,
    device: Option<Device>,
    user: Option<EndUser>,
}

/// A refusal and the device it concerns, for the `auth.failed` event.
#[derive(Debug)]
struct Refusal {
    error: EndUserError,
    device: Option<DeviceId>,
}

impl<E: Into<EndUserError>> From<E> for Refusal {
    fn from(error: E) -> Self {
        Refusal {
            error: error.into(),
            device: None,
        }
    }
}

fn auth_data<'a>(
    challenge: &'a Challenge,
    device: Option<&'a DeviceId>,
    reason: Option<&'a str>,
) -> AuthEventData<'a> {
    AuthEventData {
        challenge_id: &challenge.id,
        purpose: &challenge.purpose,
        phone: challenge.phone.as_str(),
        device_id: device,
        reason,
    }
}

/// A context as the challenge commits to it.
fn context_value(context: impl Serialize) -> Result<Value, EndUserError> {
    serde_json::to_value(context).map_err(|error| EndUserError::Unavailable(Box::new(error)))
}

fn check_installation(installation: &str) -> Result<&str, EndUserError> {
    let installation = installation.trim();
    if installation.is_empty() || installation.len() > 200 {
        return Err(EndUserError::BadRequest("Missing X-Device-ID header"));
    }
    Ok(installation)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

const INVALID_CODE: EndUserError = EndUserError::BadRequest("Invalid or expired code");
const NO_ATTEMPTS_LEFT: EndUserError =
    EndUserError::BadRequest("Too many wrong codes; start a new enrollment");
const INVALID_CHALLENGE: EndUserError =
    EndUserError::Unauthorized("Invalid, expired or already used challenge");
const UNKNOWN_PASSKEY: EndUserError = EndUserError::Unauthorized("Unknown passkey");
const DEVICE_PENDING: EndUserError = EndUserError::Unauthorized(
    "This device waits for approval from one of your other devices, or for the end of its recovery",
);
const DEVICE_INACTIVE: EndUserError =
    EndUserError::Unauthorized("This device is blocked or deregistered");
const INVALID_TOKEN: EndUserError = EndUserError::Unauthorized("Invalid or expired token");
const NOT_ENROLLED: EndUserError = EndUserError::NotFound("No enrolled user with this phone");
const ENROLLMENT_NOT_FOUND: EndUserError = EndUserError::NotFound("Enrollment not found");
const TARGET_NOT_FOUND: EndUserError =
    EndUserError::NotFound("Nothing to approve with this purpose");
