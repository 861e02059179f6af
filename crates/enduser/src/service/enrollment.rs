//! Enrollment: the SMS code, the passkey's registration and the enrollment's proof.

use crate::events::{AUTH_SUCCESS, ENROLLMENT_COMPLETED};
use idconsent_kernel::id::{ChallengeId, EnrollmentId, TypedId};
use idconsent_kernel::{DisplayText, PhoneNumber, ValidationErrors};
use idconsent_notification::{Address, NewMessage};
use serde_json::Value;

use super::{
    Asserted, ENROLLMENT_NOT_FOUND, EndUserService, EnrollRequest, INVALID_CHALLENGE, INVALID_CODE,
    NO_ATTEMPTS_LEFT, OTP_PURPOSE, UNKNOWN_PASSKEY, auth_data, check_installation,
    constant_time_eq,
};
use crate::error::EndUserError;
use crate::events::EnrollmentCompleted;
use crate::model::{
    Audience, Challenge, Device, DeviceStatus, ENROLLMENT, EndUser, Enrollment, EnrollmentStatus,
    Purpose, REGISTRATION,
};
use crate::ports::Admitted;

impl EndUserService {
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
                kind: REGISTRATION,
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
            .filter(|challenge| challenge.purpose.kind == REGISTRATION)
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

    /// `POST /v1/enrollments/:id/verify`: an assertion with purpose `enrollment` for this one.
    pub async fn verify_enrollment(
        &self,
        enrollment_id: &str,
        challenge_id: &str,
        credential: &Value,
    ) -> Result<Enrollment, EndUserError> {
        let expected = Purpose {
            kind: ENROLLMENT,
            id: Some(enrollment_id.to_owned()),
        };
        let asserted = self
            .assert(challenge_id, credential, Some(&expected))
            .await?;
        self.complete_enrollment(&asserted).await?;
        self.enrollment(enrollment_id).await
    }

    pub(super) async fn complete_enrollment(
        &self,
        asserted: &Asserted,
    ) -> Result<(), EndUserError> {
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
            ENROLLMENT_COMPLETED,
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
            AUTH_SUCCESS,
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

    fn otp_hash(&self, enrollment: &EnrollmentId, code: &str) -> String {
        self.ports
            .hasher
            .hex(OTP_PURPOSE, format!("{enrollment}:{code}").as_bytes())
    }
}
