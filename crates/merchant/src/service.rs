//! The merchant service: the one entry point for onboarding, team, applications and the
//! operator's review. Its methods live in `onboarding`, `team`, `applications` and `operator`.

use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::id::MerchantUserId;
use idconsent_kernel::{
    BlobStore, Clock, IdGenerator, KeyedHash, RandomSource, SecretVault, Timestamp,
};
use idconsent_notification::NotificationSender;

use crate::error::MerchantError;
use crate::model::{MerchantUser, Permission, UserStatus};
use crate::ports::{
    ApplicationRepository, BusinessRegistry, CodeRepository, MerchantRepository, PasswordHasher,
    SessionTokens, TeamRepository,
};

/// Every port the merchant service uses.
#[derive(Debug, Clone)]
pub struct MerchantPorts {
    pub merchants: Arc<dyn MerchantRepository>,
    pub team: Arc<dyn TeamRepository>,
    pub codes: Arc<dyn CodeRepository>,
    pub applications: Arc<dyn ApplicationRepository>,
    pub registry: Arc<dyn BusinessRegistry>,
    pub passwords: Arc<dyn PasswordHasher>,
    pub tokens: Arc<dyn SessionTokens>,
    pub vault: Arc<dyn SecretVault>,
    pub hasher: Arc<dyn KeyedHash>,
    pub blobs: Arc<dyn BlobStore>,
    pub notifications: Arc<dyn NotificationSender>,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub random: Arc<dyn RandomSource>,
}

/// Lifetimes and limits.
#[derive(Debug, Clone)]
pub struct MerchantSettings {
    /// Where emailed links point (`{dashboard}/verify-email?token=…`).
    pub dashboard_url: String,
    /// Whether callback URLs may point at private or loopback hosts (dev).
    pub allow_private_callbacks: bool,
    pub session_ttl: Duration,
    pub email_link_ttl: Duration,
    pub phone_code_ttl: Duration,
    pub invitation_ttl: Duration,
    /// The least time between two resends of a code.
    pub resend_interval: Duration,
    /// Wrong guesses allowed per phone code.
    pub code_attempts: u32,
    pub max_failed_logins: u32,
    pub lockout: Duration,
    /// How long a rotated-out webhook secret keeps signing.
    pub webhook_secret_overlap: Duration,
    pub max_applications: u64,
}

impl MerchantSettings {
    /// The login lock-out rule these settings describe.
    pub fn login_policy(&self) -> crate::login::LoginPolicy {
        crate::login::LoginPolicy {
            max_attempts: self.max_failed_logins,
            lockout: self.lockout,
        }
    }

    pub fn new(dashboard_url: impl Into<String>, allow_private_callbacks: bool) -> Self {
        Self {
            dashboard_url: dashboard_url.into(),
            allow_private_callbacks,
            session_ttl: Duration::from_secs(3600),
            email_link_ttl: Duration::from_secs(24 * 3600),
            phone_code_ttl: Duration::from_secs(600),
            invitation_ttl: Duration::from_secs(7 * 24 * 3600),
            resend_interval: Duration::from_secs(60),
            code_attempts: 5,
            max_failed_logins: 10,
            lockout: Duration::from_secs(15 * 60),
            webhook_secret_overlap: Duration::from_secs(24 * 3600),
            max_applications: 50,
        }
    }
}

#[derive(Debug, Clone)]
pub struct MerchantService {
    pub(crate) ports: MerchantPorts,
    pub(crate) settings: MerchantSettings,
}

/// A signed-in team member, as established by [`MerchantService::authenticate`].
#[derive(Debug, Clone)]
pub struct Actor {
    pub user: MerchantUser,
}

impl Actor {
    pub(crate) fn require(&self, permission: Permission) -> Result<(), MerchantError> {
        if self.user.role.may(permission) {
            Ok(())
        } else {
            Err(MerchantError::Forbidden(match permission {
                Permission::ManageAccount => "Only owners and admins can change the account",
                Permission::ManageTeam => "Only owners and admins can manage the team",
                Permission::ManageApplications => {
                    "Only owners, admins and developers can change applications"
                }
                Permission::RotateCredentials => {
                    "Only owners, admins and developers can rotate credentials"
                }
                Permission::RotateSigningSecret => {
                    "Only owners and admins can rotate the signing secret"
                }
                Permission::ViewBilling => "Only owners and admins can see billing",
            }))
        }
    }

    /// The merchant whose billing this member may see (owners and admins).
    pub fn billing_account(&self) -> Result<&idconsent_kernel::id::MerchantId, MerchantError> {
        self.require(Permission::ViewBilling)?;
        Ok(&self.user.merchant_id)
    }
}

impl MerchantService {
    pub fn new(ports: MerchantPorts, settings: MerchantSettings) -> Self {
        Self { ports, settings }
    }

    pub fn settings(&self) -> &MerchantSettings {
        &self.settings
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// Checks a session token and that its member is still active. The role comes from the
    /// database, so a changed or removed member's old tokens stop granting anything.
    pub async fn authenticate(&self, token: &str) -> Result<Actor, MerchantError> {
        let claims = self
            .ports
            .tokens
            .verify(token, self.now())
            .map_err(|_| MerchantError::InvalidSession)?;
        let user = self
            .ports
            .team
            .find(&claims.user)
            .await?
            .filter(|user| user.status == UserStatus::Active && user.merchant_id == claims.merchant)
            .ok_or(MerchantError::InvalidSession)?;
        Ok(Actor { user })
    }

    pub(crate) fn issue_session(&self, user: &MerchantUser) -> Result<SessionToken, MerchantError> {
        let issued_at = self.now();
        let expires_at = issued_at.plus(self.settings.session_ttl);
        let token = self
            .ports
            .tokens
            .issue(&crate::ports::SessionClaims {
                user: user.id.clone(),
                merchant: user.merchant_id.clone(),
                role: user.role,
                issued_at,
                expires_at,
            })
            .map_err(MerchantError::unavailable)?;
        Ok(SessionToken {
            token,
            expires_in: self.settings.session_ttl.as_secs(),
            user: user.id.clone(),
        })
    }
}

/// A dashboard session token and its lifetime in seconds.
#[derive(Debug, Clone)]
pub struct SessionToken {
    pub token: String,
    pub expires_in: u64,
    pub user: MerchantUserId,
}

/// Trims and checks a required text field.
/// Text a person reads — on the dashboard or, for names, on the wallet's approval prompt: trimmed,
/// non-empty, at most `max` characters, free of control, text-direction and invisible characters.
pub(crate) fn required_text(
    errors: &mut idconsent_kernel::ValidationErrors,
    field: &str,
    value: &str,
    max: usize,
) -> Option<String> {
    errors
        .check(field, idconsent_kernel::DisplayText::parse(value, max))
        .map(idconsent_kernel::DisplayText::into_string)
}
