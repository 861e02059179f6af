//! Ceremonies: a challenge for a purpose, the assertion verified and spent, the decision applied.

use crate::events::{AUTH_FAILED, AUTH_SUCCESS};
use std::time::Duration;

use idconsent_approval::{ApprovedVia, Approver, Decision, Effects, TargetError};
use idconsent_kernel::id::{ChallengeId, DeviceId, EnrollmentId, TypedId};
use idconsent_kernel::{Metric, PhoneNumber, ValidationErrors};
use serde_json::Value;

use super::{
    Asserted, AuthenticationStart, Completed, DEVICE_INACTIVE, DEVICE_PENDING,
    ENROLLMENT_NOT_FOUND, EndUserService, INVALID_CHALLENGE, NOT_ENROLLED, TARGET_NOT_FOUND,
    UNKNOWN_PASSKEY, auth_data, context_value,
};
use crate::commitment::{context_hash, derive_challenge};
use crate::context::{EnrollmentContext, LoginContext};
use crate::error::EndUserError;
use crate::model::{
    Audience, Challenge, Device, DeviceStatus, ENROLLMENT, EndUser, EnrollmentStatus, LOGIN,
    Purpose, PurposeKind, REGISTRATION,
};
use crate::ports::{PasskeyError, Spent, StoredPasskey};

impl EndUserService {
    /// Starts an assertion for a purpose; the challenge commits to the context returned.
    pub async fn authenticate_begin(
        &self,
        phone: &str,
        purpose_type: &str,
        purpose_id: Option<String>,
    ) -> Result<AuthenticationStart, EndUserError> {
        let mut errors = ValidationErrors::new();
        let phone = errors.check("phone", PhoneNumber::parse(phone));
        // The app names its own ceremonies (`login`, `enrollment`) or any kind the deployment's
        // approval registry serves; the list in the message is the registry's.
        let kind = PurposeKind::named(purpose_type)
            .ok()
            .filter(|k| *k == LOGIN || *k == ENROLLMENT || self.ports.approvals.serves(k));
        if kind.is_none() {
            let served: Vec<&str> = self
                .ports
                .approvals
                .kinds()
                .map(PurposeKind::as_str)
                .collect();
            errors.push(
                "purpose.type",
                format!("must be one of: login, enrollment, {}", served.join(", ")),
            );
        }
        let needs_id = kind.as_ref().is_some_and(|k| *k != LOGIN);
        let purpose_id = purpose_id.filter(|id| !id.trim().is_empty());
        if needs_id && purpose_id.is_none() {
            errors.push("purpose.id", "is required for this purpose");
        }
        let (phone, kind) = errors.finish_with(|| Some((phone?, kind?)))?;
        let purpose = Purpose {
            id: if kind == LOGIN { None } else { purpose_id },
            kind,
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
            if purpose.kind == ENROLLMENT {
                {
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
            } else if user.enrolled_at.is_none() {
                return Err(NOT_ENROLLED);
            } else if purpose.kind == LOGIN {
                context_value(LoginContext::new(phone.as_str()))?
            } else {
                {
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
        let status = if purpose.kind == LOGIN {
            "authenticated".to_owned()
        } else if purpose.kind == ENROLLMENT {
            self.complete_enrollment(&asserted).await?;
            EnrollmentStatus::Completed.as_str().to_owned()
        } else {
            let decision = if approve {
                Decision::Approve
            } else {
                Decision::Reject
            };
            self.decide(&asserted, decision).await?
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
            outbox: self.event(Some(audience), AUTH_SUCCESS, &data),
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

    /// Deletes challenges expired for more than a day (kept that long for support questions).
    pub async fn forget_expired_challenges(&self) -> Result<usize, EndUserError> {
        let before = self.now().minus(Duration::from_secs(24 * 3600));
        Ok(self.ports.challenges.forget_expired(before).await?)
    }

    /// Verifies an assertion against its challenge and spends the challenge. Every refusal
    /// after the challenge is known is reported as `auth.failed` to the purpose's audience.
    ///
    /// One read (challenge, device, user) and one write (challenge spent with the device's
    /// counter) around the verification.
    pub(super) async fn assert(
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
            .filter(|challenge| challenge.purpose.kind != REGISTRATION)
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
            AUTH_FAILED,
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
        if purpose.kind == REGISTRATION || purpose.kind == LOGIN {
            None
        } else if purpose.kind == ENROLLMENT {
            let id = EnrollmentId::parse(purpose.id.as_deref()?).ok()?;
            self.ports.enrollments.find(&id).await.ok()??.audience
        } else {
            self.ports.approvals.audience(purpose).await.ok()?
        }
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
