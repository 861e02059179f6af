//! End users, their enrollments, devices, challenges and refresh tokens.

pub use idconsent_approval::{Audience, Purpose, PurposeKind};

/// Registering a passkey (internal: never named by a client).
pub const REGISTRATION: PurposeKind = PurposeKind::declared("registration");
/// Signing in to the app.
pub const LOGIN: PurposeKind = PurposeKind::declared("login");
/// Proving a freshly registered passkey works, which completes an enrollment.
pub const ENROLLMENT: PurposeKind = PurposeKind::declared("enrollment");
use idconsent_kernel::id::{ChallengeId, DeviceId, EndUserId, EnrollmentId, RefreshFamilyId};
use idconsent_kernel::{PhoneNumber, Timestamp};

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
    /// pending → active | deregistered; active → blocked | deregistered; blocked →
    /// deregistered. Only active devices authenticate. A device added to an enrolled phone is
    /// pending until one of its active devices approves it or a recovery's cooling-off period
    /// ends (ADR 0013).
    DeviceStatus {
        Pending => "pending",
        Active => "active",
        Blocked => "blocked",
        Deregistered => "deregistered",
    }
);

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
    /// When the SMS code stops working, while one is awaited (`pending_otp`).
    pub fn code_expires_at(&self) -> Option<Timestamp> {
        (self.status == EnrollmentStatus::PendingOtp).then_some(self.otp_expires_at)
    }

    /// Whether the awaited SMS code has expired by `now` (a new enrollment is needed).
    pub fn code_expired_at(&self, now: Timestamp) -> bool {
        self.code_expires_at().is_some_and(|expiry| now >= expiry)
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
    /// A pending device whose user started a recovery: it becomes active at this time unless
    /// an existing device rejects it first.
    pub recovery_ends_at: Option<Timestamp>,
}

impl Device {
    /// What a new device of a user with these devices starts as (ADR 0013): the very first
    /// device of a phone is active at once; any later one is pending until an active device
    /// approves it or a recovery's cooling-off period ends — whatever state the earlier ones are
    /// in, so a phone number alone (an SMS code) never takes over an enrolled identity.
    pub fn status_after(existing: &[Device]) -> DeviceStatus {
        if existing.is_empty() {
            DeviceStatus::Active
        } else {
            DeviceStatus::Pending
        }
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
