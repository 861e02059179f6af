//! The end-user use cases: enroll, register a passkey, authenticate for a purpose, approve,
//! app tokens and devices.

mod ceremony;
mod enrollment;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use idconsent_approval::ApprovalRegistry;
use idconsent_kernel::id::{ChallengeId, DeviceId, TypedId};
use idconsent_kernel::{Clock, IdGenerator, KeyedHash, Metering, Nudge, RandomSource, Timestamp};
use idconsent_notification::NotificationSender;
use idconsent_webhook::{DeliveryStore, EventType, Outbox};
use serde::Serialize;
use serde_json::Value;

use crate::error::EndUserError;
use crate::events::AuthEventData;
use crate::model::{Audience, Challenge, Device, EndUser, Purpose};
use crate::ports::{
    AccessTokens, ChallengeRepository, DeviceRepository, EnrollmentRepository, PasskeyCeremony,
    RefreshTokenRepository,
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
