//! The merchant domain's entities and value objects.

use std::collections::BTreeSet;
use std::fmt;

use idconsent_kernel::id::{ApplicationId, ClientId, DocumentId, MerchantId, MerchantUserId};
use idconsent_kernel::{
    CalendarDate, EmailAddress, Environment, Intent, PhoneNumber, Sealed, Timestamp, WebUrl,
};

/// A team member's role (CONTRACT §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Owner,
    Admin,
    Developer,
    Viewer,
}

/// What a role may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Business profile, documents, go-live.
    ManageAccount,
    /// Invite and remove members.
    ManageTeam,
    /// Create and change applications.
    ManageApplications,
    /// Rotate API keys and webhook secrets.
    RotateCredentials,
    /// Rotate the `sk_` request-signing secret (it signs every API call of the application).
    RotateSigningSecret,
    /// See the account's usage and invoices.
    ViewBilling,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Admin, Role::Developer, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Developer => "developer",
            Role::Viewer => "viewer",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    pub fn may(self, permission: Permission) -> bool {
        match permission {
            Permission::ManageAccount
            | Permission::ManageTeam
            | Permission::RotateSigningSecret
            | Permission::ViewBilling => {
                matches!(self, Role::Owner | Role::Admin)
            }
            Permission::ManageApplications | Permission::RotateCredentials => {
                matches!(self, Role::Owner | Role::Admin | Role::Developer)
            }
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a merchant account is on its way to live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MerchantStatus {
    /// Registered; sandbox only.
    Onboarding,
    /// Submitted for go-live review.
    InReview,
    /// Approved: live credentials issued.
    Live,
    /// Review rejected; may be fixed and submitted again.
    Rejected,
}

impl MerchantStatus {
    pub const ALL: [MerchantStatus; 4] = [
        MerchantStatus::Onboarding,
        MerchantStatus::InReview,
        MerchantStatus::Live,
        MerchantStatus::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MerchantStatus::Onboarding => "onboarding",
            MerchantStatus::InReview => "in_review",
            MerchantStatus::Live => "live",
            MerchantStatus::Rejected => "rejected",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// The outcome of the corporate registry check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RegistryStatus {
    /// Not checked yet.
    Unverified,
    /// The registry knows the number, name and date.
    Verified,
    /// The registry does not know the number.
    NotFound,
    /// The registry knows the number under another name or date.
    Mismatch,
    /// The registry could not be asked; saving the profile again retries.
    Unavailable,
}

impl RegistryStatus {
    pub const ALL: [RegistryStatus; 5] = [
        RegistryStatus::Unverified,
        RegistryStatus::Verified,
        RegistryStatus::NotFound,
        RegistryStatus::Mismatch,
        RegistryStatus::Unavailable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RegistryStatus::Unverified => "unverified",
            RegistryStatus::Verified => "verified",
            RegistryStatus::NotFound => "not_found",
            RegistryStatus::Mismatch => "mismatch",
            RegistryStatus::Unavailable => "unavailable",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// The kinds of identity document a representative can present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdentityType {
    Passport,
    NationalId,
    DriversLicense,
}

impl IdentityType {
    pub const ALL: [IdentityType; 3] = [
        IdentityType::Passport,
        IdentityType::NationalId,
        IdentityType::DriversLicense,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IdentityType::Passport => "passport",
            IdentityType::NationalId => "national_id",
            IdentityType::DriversLicense => "drivers_license",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// The business profile (spec §2.4) and the registry's verdict on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusinessProfile {
    pub registered_name: String,
    pub registration_number: String,
    pub date_registered: CalendarDate,
    pub address: Option<String>,
    pub usecase: Option<String>,
    pub description: Option<String>,
    pub identity_type: Option<IdentityType>,
    pub identity_number: Option<String>,
    pub registry_status: RegistryStatus,
    pub registry_checked_at: Option<Timestamp>,
}

/// A merchant account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merchant {
    pub id: MerchantId,
    pub business_name: String,
    pub contact_name: String,
    pub entity_type: String,
    pub industry: String,
    pub email: EmailAddress,
    pub phone: PhoneNumber,
    pub email_verified_at: Option<Timestamp>,
    pub phone_verified_at: Option<Timestamp>,
    pub profile: BusinessProfile,
    pub status: MerchantStatus,
    pub submitted_at: Option<Timestamp>,
    pub decided_at: Option<Timestamp>,
    pub rejection_reason: Option<String>,
    /// The billing plan (`free`, `basic`, `growth`, `enterprise`).
    pub plan: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Whether a team member can sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UserStatus {
    /// Invited; becomes active when the invitation is accepted.
    Invited,
    Active,
    /// Removed from the team; tokens stop working.
    Removed,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Invited => "invited",
            UserStatus::Active => "active",
            UserStatus::Removed => "removed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [UserStatus::Invited, UserStatus::Active, UserStatus::Removed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A member of a merchant's team.
#[derive(Clone, PartialEq, Eq)]
pub struct MerchantUser {
    pub id: MerchantUserId,
    pub merchant_id: MerchantId,
    pub email: EmailAddress,
    pub name: String,
    pub role: Role,
    pub status: UserStatus,
    /// Argon2id PHC string; `None` until an invitation is accepted.
    pub password_hash: Option<String>,
    pub failed_logins: u32,
    pub locked_until: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl MerchantUser {
    /// Whether the member proved their address to us: an invited member by accepting the
    /// emailed invitation, the owner who registered with the merchant's emailed verification
    /// link.
    pub fn address_verified(&self, merchant: &Merchant) -> bool {
        match (self.status, self.role) {
            (UserStatus::Active, Role::Owner) => {
                merchant.email_verified_at.is_some()
                    && self
                        .email
                        .as_str()
                        .eq_ignore_ascii_case(merchant.email.as_str())
            }
            (UserStatus::Active, _) => true,
            (UserStatus::Invited | UserStatus::Removed, _) => false,
        }
    }
}

impl fmt::Debug for MerchantUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MerchantUser")
            .field("id", &self.id)
            .field("merchant_id", &self.merchant_id)
            .field("role", &self.role)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// What an uploaded document is (spec §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocumentType {
    BusinessRegistration,
    RepresentativeId,
    TaxDocument,
    AddressProof,
}

impl DocumentType {
    pub const ALL: [DocumentType; 4] = [
        DocumentType::BusinessRegistration,
        DocumentType::RepresentativeId,
        DocumentType::TaxDocument,
        DocumentType::AddressProof,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DocumentType::BusinessRegistration => "business_registration",
            DocumentType::RepresentativeId => "representative_id",
            DocumentType::TaxDocument => "tax_document",
            DocumentType::AddressProof => "address_proof",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// The file formats accepted for documents, recognised by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocumentFormat {
    Pdf,
    Png,
    Jpeg,
}

impl DocumentFormat {
    pub const ALL: [DocumentFormat; 3] = [
        DocumentFormat::Pdf,
        DocumentFormat::Png,
        DocumentFormat::Jpeg,
    ];

    pub fn mime_type(self) -> &'static str {
        match self {
            DocumentFormat::Pdf => "application/pdf",
            DocumentFormat::Png => "image/png",
            DocumentFormat::Jpeg => "image/jpeg",
        }
    }

    pub fn parse_mime(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.mime_type() == text)
    }

    pub fn extension(self) -> &'static str {
        match self {
            DocumentFormat::Pdf => "pdf",
            DocumentFormat::Png => "png",
            DocumentFormat::Jpeg => "jpg",
        }
    }

    /// Whether `content` starts with this format's signature.
    pub fn matches(self, content: &[u8]) -> bool {
        match self {
            DocumentFormat::Pdf => content.starts_with(b"%PDF-"),
            DocumentFormat::Png => content.starts_with(b"\x89PNG\r\n\x1a\n"),
            DocumentFormat::Jpeg => content.starts_with(&[0xFF, 0xD8, 0xFF]),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DocumentStatus {
    Uploaded,
    Verified,
}

impl DocumentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentStatus::Uploaded => "uploaded",
            DocumentStatus::Verified => "verified",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [DocumentStatus::Uploaded, DocumentStatus::Verified]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A document a merchant uploaded for review. The content lives in the blob store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub id: DocumentId,
    pub merchant_id: MerchantId,
    pub document_type: DocumentType,
    pub file_name: String,
    pub format: DocumentFormat,
    pub size: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
    pub blob_key: String,
    pub status: DocumentStatus,
    pub uploaded_at: Timestamp,
}

/// An application's enabled request types; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTypes(BTreeSet<Intent>);

impl RequestTypes {
    pub fn all() -> Self {
        Self(Intent::ALL.into_iter().collect())
    }

    /// `None` when `intents` is empty.
    pub fn new(intents: impl IntoIterator<Item = Intent>) -> Option<Self> {
        let set: BTreeSet<Intent> = intents.into_iter().collect();
        (!set.is_empty()).then_some(Self(set))
    }

    pub fn allows(&self, intent: Intent) -> bool {
        self.0.contains(&intent)
    }

    pub fn iter(&self) -> impl Iterator<Item = Intent> + '_ {
        self.0.iter().copied()
    }
}

/// An API key as stored for display (sealed) with the time it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub sealed: Sealed,
    pub generated_at: Timestamp,
}

/// What each sealed credential of an application is bound to (`SealedFor`, ADR 0026): the
/// application's id and the kind of secret. The kinds are logical, so a rotated secret moved to
/// its "previous" column still opens.
pub mod sealing {
    use idconsent_kernel::id::ApplicationId;
    use idconsent_kernel::{Environment, SealedFor};

    pub const REQUEST_SECRET: &str = "application.request-secret";
    pub const WEBHOOK_SECRET: &str = "application.webhook-secret";
    pub const SANDBOX_API_KEY: &str = "application.api-key.sandbox";
    pub const LIVE_API_KEY: &str = "application.api-key.live";

    pub fn request_secret(application: &ApplicationId) -> SealedFor<'_> {
        SealedFor::new(REQUEST_SECRET, application.as_str())
    }

    pub fn webhook_secret(application: &ApplicationId) -> SealedFor<'_> {
        SealedFor::new(WEBHOOK_SECRET, application.as_str())
    }

    pub fn api_key(application: &ApplicationId, environment: Environment) -> SealedFor<'_> {
        let kind = match environment {
            Environment::Sandbox => SANDBOX_API_KEY,
            Environment::Live => LIVE_API_KEY,
        };
        SealedFor::new(kind, application.as_str())
    }
}

/// A webhook secret that still signs after rotation, until `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetiringSecret {
    pub sealed: Sealed,
    pub expires_at: Timestamp,
}

/// A merchant application with its credentials (sealed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Application {
    pub id: ApplicationId,
    pub merchant_id: MerchantId,
    pub client_id: ClientId,
    pub name: String,
    pub callback_url: WebUrl,
    pub redirect_uris: Vec<WebUrl>,
    pub request_types: RequestTypes,
    pub sandbox_key: KeyRecord,
    pub live_key: Option<KeyRecord>,
    /// The HMAC secret for signed requests, shared by both environments.
    pub secret: Sealed,
    /// The secret before the last rotation, still accepted until it expires.
    pub previous_secret: Option<RetiringSecret>,
    pub webhook_secret: Sealed,
    pub previous_webhook_secret: Option<RetiringSecret>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Application {
    /// `live` once live credentials exist, else `sandbox`.
    pub fn environment(&self) -> Environment {
        if self.live_key.is_some() {
            Environment::Live
        } else {
            Environment::Sandbox
        }
    }

    pub fn key_record(&self, environment: Environment) -> Option<&KeyRecord> {
        match environment {
            Environment::Sandbox => Some(&self.sandbox_key),
            Environment::Live => self.live_key.as_ref(),
        }
    }

    /// Request-signing secrets that currently verify: the current one, and the previous one
    /// until it expires.
    pub fn request_secrets(&self, now: Timestamp) -> Vec<&Sealed> {
        let mut secrets = vec![&self.secret];
        if let Some(previous) = &self.previous_secret
            && previous.expires_at > now
        {
            secrets.push(&previous.sealed);
        }
        secrets
    }

    /// Webhook secrets that currently sign: the current one, and the previous one until it
    /// expires.
    pub fn signing_webhook_secrets(&self, now: Timestamp) -> Vec<&Sealed> {
        let mut secrets = vec![&self.webhook_secret];
        if let Some(previous) = &self.previous_webhook_secret
            && previous.expires_at > now
        {
            secrets.push(&previous.sealed);
        }
        secrets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_the_contract() {
        assert!(Role::Owner.may(Permission::ManageAccount));
        assert!(Role::Admin.may(Permission::ManageTeam));
        assert!(!Role::Developer.may(Permission::ManageAccount));
        assert!(Role::Developer.may(Permission::RotateCredentials));
        assert!(!Role::Viewer.may(Permission::RotateCredentials));
        assert!(!Role::Viewer.may(Permission::ManageApplications));
    }

    #[test]
    fn document_formats_are_recognised_by_their_first_bytes() {
        assert!(DocumentFormat::Pdf.matches(b"%PDF-1.7\n"));
        assert!(DocumentFormat::Png.matches(b"\x89PNG\r\n\x1a\n\0\0"));
        assert!(DocumentFormat::Jpeg.matches(&[0xFF, 0xD8, 0xFF, 0xE0]));
        assert!(!DocumentFormat::Pdf.matches(b"\x89PNG\r\n\x1a\n"));
        assert!(!DocumentFormat::Jpeg.matches(b"GIF89a"));
    }

    #[test]
    fn request_types_are_never_empty() {
        assert!(RequestTypes::new([]).is_none());
        let types = RequestTypes::new([Intent::Oauth]).unwrap();
        assert!(types.allows(Intent::Oauth));
        assert!(!types.allows(Intent::Login));
    }
}
