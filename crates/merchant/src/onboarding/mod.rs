//! Registration, email and phone verification, sign-in, the business profile, documents and
//! the go-live submission.
//!
//! - this file: registration, and the checks and lookups the others share;
//! - `codes`: the emailed link and the SMS code (sending, resending, verifying);
//! - `signin`: sign-in with lock-out;
//! - `profile`: the account view, business profile, documents and the go-live submission.

use idconsent_kernel::id::{MerchantId, MerchantUserId};
use idconsent_kernel::{CalendarDate, EmailAddress, PhoneNumber, ValidationErrors};

use crate::error::MerchantError;
use crate::model::{
    BusinessProfile, Merchant, MerchantStatus, MerchantUser, RegistryStatus, Role, UserStatus,
};
use crate::ports::{RegistryAnswer, RegistryQuery, RepositoryError};
use crate::service::{MerchantService, SessionToken, required_text};

mod codes;
mod profile;
mod signin;

pub(crate) use codes::Resend;
pub use profile::{AccountView, BusinessPatch, DocumentUpload, MAX_DOCUMENT_BYTES};

/// The register request (spec §2.4 plus `phone`), as received.
#[derive(Debug, Clone, Default)]
pub struct RegisterRequest {
    pub business_name: String,
    pub contact_name: String,
    pub email: String,
    pub password: String,
    pub entity_type: String,
    pub registration_number: String,
    pub date_registered: String,
    pub industry: String,
    pub phone: String,
}

/// A new account: the merchant, its owner and a session token.
#[derive(Debug, Clone)]
pub struct Registered {
    pub merchant: Merchant,
    pub owner: MerchantUser,
    pub session: SessionToken,
}

const PASSWORD_MIN_CHARS: usize = 10;
const PASSWORD_MAX_CHARS: usize = 200;

impl MerchantService {
    /// Creates the merchant and its owner, checks the registry, sends the phone code and the
    /// email link, and signs the owner in.
    pub async fn register(&self, request: RegisterRequest) -> Result<Registered, MerchantError> {
        let mut errors = ValidationErrors::new();
        let business_name = required_text(&mut errors, "businessName", &request.business_name, 200);
        let contact_name = required_text(&mut errors, "contactName", &request.contact_name, 200);
        let email = errors.check("email", EmailAddress::parse(&request.email));
        let password = check_password(&mut errors, "password", &request.password);
        let entity_type = required_text(&mut errors, "entityType", &request.entity_type, 100);
        let registration_number = check_registration_number(
            &mut errors,
            "registrationNumber",
            &request.registration_number,
        );
        let date_registered = check_date_registered(
            &mut errors,
            "dateRegistered",
            &request.date_registered,
            self.now(),
        );
        let industry = required_text(&mut errors, "industry", &request.industry, 100);
        let phone = errors.check("phone", PhoneNumber::parse(&request.phone));
        let (
            business_name,
            contact_name,
            email,
            password,
            entity_type,
            number,
            date,
            industry,
            phone,
        ) = errors.finish_with(|| {
            Some((
                business_name?,
                contact_name?,
                email?,
                password?,
                entity_type?,
                registration_number?,
                date_registered?,
                industry?,
                phone?,
            ))
        })?;

        if self.ports.team.find_by_email(&email).await?.is_some() {
            return Err(MerchantError::EmailTaken);
        }
        let password_hash = self.ports.passwords.hash(&password).await?;
        let now = self.now();
        let mut profile = BusinessProfile {
            registered_name: business_name.clone(),
            registration_number: number,
            date_registered: date,
            address: None,
            usecase: None,
            description: None,
            identity_type: None,
            identity_number: None,
            registry_status: RegistryStatus::Unverified,
            registry_checked_at: None,
        };
        self.check_registry(&mut profile).await;
        let merchant = Merchant {
            id: self.ports.ids.next::<MerchantId>(),
            business_name,
            contact_name: contact_name.clone(),
            entity_type,
            industry,
            email: email.clone(),
            phone,
            email_verified_at: None,
            phone_verified_at: None,
            profile,
            status: MerchantStatus::Onboarding,
            submitted_at: None,
            decided_at: None,
            rejection_reason: None,
            plan: "free".into(),
            created_at: now,
            updated_at: now,
        };
        let owner = MerchantUser {
            id: self.ports.ids.next::<MerchantUserId>(),
            merchant_id: merchant.id.clone(),
            email,
            name: contact_name,
            role: Role::Owner,
            status: UserStatus::Active,
            password_hash: Some(password_hash),
            failed_logins: 0,
            locked_until: None,
            created_at: now,
            updated_at: now,
        };
        match self.ports.merchants.create(&merchant, &owner).await {
            Err(RepositoryError::Duplicate) => return Err(MerchantError::EmailTaken),
            other => other?,
        }
        self.send_email_link(&merchant, Resend::Always).await?;
        self.send_phone_code(&merchant, Resend::Always).await?;
        let session = self.issue_session(&owner)?;
        Ok(Registered {
            merchant,
            owner,
            session,
        })
    }

    pub(crate) async fn load_merchant(&self, id: &MerchantId) -> Result<Merchant, MerchantError> {
        self.ports
            .merchants
            .find(id)
            .await?
            .ok_or(MerchantError::NotFound("Merchant"))
    }

    async fn check_registry(&self, profile: &mut BusinessProfile) {
        let query = RegistryQuery {
            registration_number: profile.registration_number.clone(),
            registered_name: profile.registered_name.clone(),
            date_registered: profile.date_registered,
        };
        profile.registry_status = match self.ports.registry.check(&query).await {
            Ok(RegistryAnswer::Matched) => RegistryStatus::Verified,
            Ok(RegistryAnswer::NotFound) => RegistryStatus::NotFound,
            Ok(RegistryAnswer::Mismatch) => RegistryStatus::Mismatch,
            Err(_) => RegistryStatus::Unavailable,
        };
        profile.registry_checked_at = Some(self.now());
    }
}

pub(crate) fn check_password(
    errors: &mut ValidationErrors,
    field: &str,
    password: &str,
) -> Option<String> {
    let length = password.chars().count();
    if length < PASSWORD_MIN_CHARS {
        errors.push(
            field,
            format!("must be at least {PASSWORD_MIN_CHARS} characters"),
        );
        None
    } else if length > PASSWORD_MAX_CHARS {
        errors.push(
            field,
            format!("must be at most {PASSWORD_MAX_CHARS} characters"),
        );
        None
    } else {
        Some(password.to_owned())
    }
}

fn check_registration_number(
    errors: &mut ValidationErrors,
    field: &str,
    value: &str,
) -> Option<String> {
    let trimmed = value.trim();
    let valid = (1..=40).contains(&trimmed.len())
        && trimmed
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '/' | '.' | ' '));
    if valid {
        Some(trimmed.to_owned())
    } else {
        errors.push(
            field,
            "must be 1 to 40 letters, digits, spaces, '-', '/' or '.'",
        );
        None
    }
}

fn check_date_registered(
    errors: &mut ValidationErrors,
    field: &str,
    value: &str,
    now: idconsent_kernel::Timestamp,
) -> Option<CalendarDate> {
    match CalendarDate::parse(value) {
        Ok(date) if date.is_after(now) => {
            errors.push(field, "must not be in the future");
            None
        }
        Ok(date) if date.year() < 1800 => {
            errors.push(field, "must be after 1800");
            None
        }
        Ok(date) => Some(date),
        Err(error) => {
            errors.push(field, error.to_string());
            None
        }
    }
}
