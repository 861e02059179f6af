//! The `data` of end-user events, as the owning application receives it in webhooks
//! (CONTRACT §8): `enrollment.completed`, `device.registered`, `device.deregistered`,
//! `auth.success` and `auth.failed`.

use idconsent_approval::Purpose;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{ChallengeId, DeviceId, EnrollmentId};
use idconsent_webhook::EventType;
use serde::Serialize;

// The event types this domain emits (the webhook crate knows none by name).
/// `auth.success`: An assertion verified, for the object its challenge named.
pub const AUTH_SUCCESS: EventType = EventType::declared("auth.success");
/// `auth.failed`: An assertion was refused.
pub const AUTH_FAILED: EventType = EventType::declared("auth.failed");
/// `device.registered`: A passkey was registered for an enrolled phone.
pub const DEVICE_REGISTERED: EventType = EventType::declared("device.registered");
/// `device.activated`: A device added to an enrolled phone became active.
pub const DEVICE_ACTIVATED: EventType = EventType::declared("device.activated");
/// `device.recovery_started`: A new device of a phone with no device left waits out its recovery.
pub const DEVICE_RECOVERY_STARTED: EventType = EventType::declared("device.recovery_started");
/// `device.deregistered`: A device was removed.
pub const DEVICE_DEREGISTERED: EventType = EventType::declared("device.deregistered");
/// `enrollment.completed`: An enrollment was proven with its new passkey.
pub const ENROLLMENT_COMPLETED: EventType = EventType::declared("enrollment.completed");

/// `enrollment.completed`: the phone is enrolled, with the device that proved it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnrollmentCompleted<'a> {
    pub enrollment_id: &'a EnrollmentId,
    pub phone: &'a str,
    pub device_id: &'a DeviceId,
    /// Always `completed`.
    pub status: &'static str,
    pub completed_at: Timestamp,
}

/// `device.registered`: a passkey was registered for an enrollment.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRegistered<'a> {
    pub device_id: &'a DeviceId,
    pub enrollment_id: &'a EnrollmentId,
    pub phone: &'a str,
    pub name: &'a str,
    pub platform: &'a str,
    /// `active`, or `pending` when the phone already has devices (an approval or a recovery
    /// must follow).
    pub status: &'static str,
}

/// `device.activated`: a pending device may now authenticate — approved by another device of
/// the user, or at the end of a recovery.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceActivated<'a> {
    pub device_id: &'a DeviceId,
    pub phone: &'a str,
    pub name: &'a str,
    pub platform: &'a str,
    /// `device` (approved with one of the user's devices) or `recovery`.
    pub activated_by: &'static str,
    /// The approving device, for `device`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<&'a DeviceId>,
}

/// `device.recovery_started`: a new device of a phone whose user has no device to approve it
/// with will become active at `recoveryEndsAt` unless one of the user's devices rejects it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRecoveryStarted<'a> {
    pub device_id: &'a DeviceId,
    pub phone: &'a str,
    pub name: &'a str,
    pub platform: &'a str,
    pub recovery_ends_at: Timestamp,
}

/// `device.deregistered`: the device's passkey no longer works.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceDeregistered<'a> {
    pub device_id: &'a DeviceId,
    pub phone: &'a str,
    pub name: &'a str,
    pub platform: &'a str,
}

/// `auth.success` and `auth.failed`: an assertion for a purpose, by which device (`null` when
/// the assertion named no known passkey), and for a failure why.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthEventData<'a> {
    pub challenge_id: &'a ChallengeId,
    pub purpose: &'a Purpose,
    pub phone: &'a str,
    pub device_id: Option<&'a DeviceId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use idconsent_approval::PurposeKind;
    use idconsent_kernel::id::TypedId;

    use super::*;

    #[test]
    fn auth_data_names_the_purpose_and_the_reason_only_on_failure() {
        let challenge = ChallengeId::parse("chl_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN").unwrap();
        let purpose = Purpose::new(PurposeKind::declared("consent"), "cs_1");
        let success = AuthEventData {
            challenge_id: &challenge,
            purpose: &purpose,
            phone: "+15551234567",
            device_id: None,
            reason: None,
        };
        assert_eq!(
            serde_json::to_string(&success).unwrap(),
            r#"{"challengeId":"chl_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN","purpose":{"type":"consent","id":"cs_1"},"phone":"+15551234567","deviceId":null}"#
        );
        let failure = AuthEventData {
            reason: Some("Passkey verification failed"),
            ..success
        };
        assert_eq!(
            serde_json::to_value(&failure).unwrap()["reason"],
            "Passkey verification failed"
        );
    }
}
