//! End users, their enrollments, devices, challenges and refresh tokens.

use idconsent_kernel::id::{
    ApplicationId, ChallengeId, DeviceId, EndUserId, EnrollmentId, RefreshFamilyId,
};
use idconsent_kernel::{Environment, PhoneNumber, Timestamp};
use serde_json::{Value, json};

macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|value| value.as_str() == text)
            }
        }
    };
}

text_enum!(
    /// pending_otp → passkey_registered → completed; pending_otp → failed after 5 wrong codes.
    EnrollmentStatus {
        PendingOtp => "pending_otp",
        PasskeyRegistered => "passkey_registered",
        Completed => "completed",
        Failed => "failed",
    }
);

text_enum!(
    /// active → blocked | deregistered; blocked → deregistered. Only active devices authenticate.
    DeviceStatus {
        Active => "active",
        Blocked => "blocked",
        Deregistered => "deregistered",
    }
);

text_enum!(
    /// What a challenge may be used for: registering a passkey, or an assertion for a purpose.
    PurposeKind {
        Registration => "registration",
        Login => "login",
        Enrollment => "enrollment",
        Consent => "consent",
        Mandate => "mandate",
        Signature => "signature",
    }
);

/// The application an enrollment, session or other object belongs to: its events go there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audience {
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub callback_url: String,
}

/// An enrollment: a phone proven by SMS code, then a passkey, then an assertion with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enrollment {
    pub id: EnrollmentId,
    pub phone: PhoneNumber,
    pub name: Option<String>,
    pub device_name: Option<String>,
    pub platform: Option<String>,
    /// The app's `X-Device-ID` at enrollment.
    pub installation: String,
    /// Set when a merchant created the enrollment with a signed request.
    pub audience: Option<Audience>,
    pub status: EnrollmentStatus,
    /// Keyed hash of the SMS code; never the code itself.
    pub otp_hash: String,
    pub otp_attempts_left: u32,
    pub otp_expires_at: Timestamp,
    pub device_id: Option<DeviceId>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Enrollment {
    pub fn to_json(&self, now: Timestamp) -> Value {
        json!({
            "enrollmentId": self.id,
            "phone": self.phone.as_str(),
            "status": self.status.as_str(),
            "name": self.name,
            "deviceName": self.device_name,
            "platform": self.platform,
            "deviceId": self.device_id,
            "expiresAt": (self.status == EnrollmentStatus::PendingOtp).then(|| self.otp_expires_at.to_rfc3339()),
            "codeExpired": self.status == EnrollmentStatus::PendingOtp && now >= self.otp_expires_at,
            "createdAt": self.created_at.to_rfc3339(),
            "updatedAt": self.updated_at.to_rfc3339(),
        })
    }
}

/// An end user: one per phone number, enrolled once for every merchant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndUser {
    pub id: EndUserId,
    pub phone: PhoneNumber,
    /// The WebAuthn user handle: 16 random bytes, hex.
    pub handle: String,
    pub name: Option<String>,
    pub enrolled_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

/// A device: one passkey registered from one installation of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub id: DeviceId,
    pub user_id: EndUserId,
    pub name: String,
    pub platform: String,
    pub installation: String,
    /// The application whose enrollment registered the device: it hears of its removal.
    pub audience: Option<Audience>,
    pub status: DeviceStatus,
    /// base64url credential id, unique across devices.
    pub credential_id: String,
    /// The passkey as the WebAuthn adapter serialised it at registration (public key, flags).
    pub passkey: String,
    /// The signature counter of the last verified assertion (or of the registration).
    pub counter: u32,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
}

impl Device {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "platform": self.platform,
            "status": self.status.as_str(),
            "createdAt": self.created_at.to_rfc3339(),
            "lastUsedAt": self.last_used_at.map(Timestamp::to_rfc3339),
        })
    }
}

/// What a challenge is for: a kind and, except for registration and login, the object's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Purpose {
    pub kind: PurposeKind,
    pub id: Option<String>,
}

impl Purpose {
    pub fn to_json(&self) -> Value {
        json!({ "type": self.kind.as_str(), "id": self.id })
    }
}

/// A single-use FIDO challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub id: ChallengeId,
    pub purpose: Purpose,
    pub phone: PhoneNumber,
    /// Registration challenges name their enrollment.
    pub enrollment_id: Option<EnrollmentId>,
    /// The ceremony state the WebAuthn adapter needs to finish (opaque here).
    pub state: String,
    /// Hex SHA-256 of the canonical context the user was shown (assertions only).
    pub context_hash: Option<String>,
    pub expires_at: Timestamp,
    pub used_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

/// A stored refresh token (only its keyed hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshToken {
    pub hash: String,
    pub family: RefreshFamilyId,
    pub user_id: EndUserId,
    pub device_id: DeviceId,
    pub installation: String,
    pub expires_at: Timestamp,
    pub used_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    pub created_at: Timestamp,
}
