//! Registration, email and phone verification, sign-in, the business profile, documents and
//! the go-live submission.

use idconsent_kernel::id::{DocumentId, MerchantId, MerchantUserId, TypedId};
use idconsent_kernel::{CalendarDate, EmailAddress, PhoneNumber, ValidationErrors};
use idconsent_notification::{Address, NewMessage};

use crate::credentials::generate_link_token;
use crate::error::MerchantError;
use crate::golive::{self, Requirement};
use crate::login::LoginAdmission;
use crate::model::{
    BusinessProfile, Document, DocumentFormat, DocumentStatus, DocumentType, IdentityType,
    Merchant, MerchantStatus, MerchantUser, Permission, RegistryStatus, Role, UserStatus,
};
use crate::ports::{
    CodePurpose, OneTimeCode, RegistryAnswer, RegistryQuery, RepositoryError, conflicts,
};
use crate::service::{Actor, MerchantService, SessionToken, required_text};

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

/// Business profile changes (PATCH): only the fields present change.
#[derive(Debug, Clone, Default)]
pub struct BusinessPatch {
    pub registered_name: Option<String>,
    pub registration_number: Option<String>,
    pub date_registered: Option<String>,
    pub address: Option<String>,
    pub usecase: Option<String>,
    pub description: Option<String>,
    pub identity_type: Option<String>,
    pub identity_number: Option<String>,
}

/// A document upload (spec §2.4) with its decoded content.
#[derive(Debug, Clone)]
pub struct DocumentUpload {
    pub document_type: String,
    pub file_name: String,
    pub mime_type: String,
    pub declared_size: u64,
    pub content: Vec<u8>,
}

/// The account as its team sees it.
#[derive(Debug, Clone)]
pub struct AccountView {
    pub merchant: Merchant,
    pub user: MerchantUser,
    pub documents: Vec<Document>,
    pub checklist: Vec<(Requirement, bool)>,
}

/// The largest accepted document.
pub const MAX_DOCUMENT_BYTES: u64 = 10 * 1024 * 1024;

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

    /// Confirms the emailed link (no session needed). Single use, 24 hours.
    pub async fn verify_email_link(&self, token: &str) -> Result<Merchant, MerchantError> {
        let hash = self
            .ports
            .hasher
            .hex(CodePurpose::EmailVerification.as_str(), token.as_bytes());
        let code = self
            .ports
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &hash)
            .await?
            .filter(|code| code.expires_at > self.now())
            .ok_or(MerchantError::InvalidLink)?;
        if !self
            .ports
            .codes
            .consume(code.purpose, &code.subject)
            .await?
        {
            return Err(MerchantError::InvalidLink);
        }
        let id = MerchantId::parse(&code.subject).map_err(|_| MerchantError::InvalidLink)?;
        self.ports
            .merchants
            .mark_email_verified(&id, self.now())
            .await?;
        self.load_merchant(&id).await
    }

    /// Sends a new email link, at most once a minute.
    pub async fn resend_email_link(&self, actor: &Actor) -> Result<(), MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.email_verified_at.is_some() {
            return Err(MerchantError::Conflict(
                "The email is already verified".into(),
            ));
        }
        self.send_email_link(&merchant, Resend::AfterCoolDown).await
    }

    /// Checks the SMS code: 10 minutes, 5 wrong guesses, single use.
    pub async fn verify_phone(&self, actor: &Actor, code: &str) -> Result<Merchant, MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.phone_verified_at.is_some() {
            return Err(MerchantError::Conflict(
                "The phone number is already verified".into(),
            ));
        }
        let subject = merchant.id.as_str();
        // The guess is counted before it is compared, atomically: parallel guesses get no more
        // tries than sequential ones.
        let stored = self
            .ports
            .codes
            .take_attempt(CodePurpose::PhoneVerification, subject, self.now())
            .await?
            .ok_or(MerchantError::InvalidCode)?;
        let presented = self.ports.hasher.hex(
            CodePurpose::PhoneVerification.as_str(),
            code.trim().as_bytes(),
        );
        if presented != stored.code_hash {
            return Err(MerchantError::InvalidCode);
        }
        if !self
            .ports
            .codes
            .consume(CodePurpose::PhoneVerification, subject)
            .await?
        {
            return Err(MerchantError::InvalidCode);
        }
        self.ports
            .merchants
            .mark_phone_verified(&merchant.id, self.now())
            .await?;
        self.load_merchant(&merchant.id).await
    }

    /// Sends a new SMS code, at most once a minute.
    pub async fn resend_phone_code(&self, actor: &Actor) -> Result<(), MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.phone_verified_at.is_some() {
            return Err(MerchantError::Conflict(
                "The phone number is already verified".into(),
            ));
        }
        self.send_phone_code(&merchant, Resend::AfterCoolDown).await
    }

    /// Signs a member in. Ten failures in a row lock the member out for 15 minutes; an
    /// unknown email costs as much time as a wrong password.
    pub async fn login(&self, email: &str, password: &str) -> Result<SessionToken, MerchantError> {
        let Some(user) = (match EmailAddress::parse(email) {
            Ok(email) => self.ports.team.find_by_email(&email).await?,
            Err(_) => None,
        }) else {
            self.ports.passwords.verify_dummy(password).await?;
            return Err(MerchantError::InvalidCredentials);
        };
        let now = self.now();
        // Taken before the (slow) password check, so parallel guesses queue on the count.
        let policy = self.settings.login_policy();
        if let LoginAdmission::Refused { until } = self
            .ports
            .team
            .take_login_attempt(&user.id, policy, now)
            .await?
        {
            return Err(MerchantError::LockedOut {
                retry_after_secs: until.since(now).as_secs().max(1),
            });
        }
        let verified = match (&user.password_hash, user.status) {
            (Some(hash), UserStatus::Active) => self.ports.passwords.verify(password, hash).await?,
            _ => {
                self.ports.passwords.verify_dummy(password).await?;
                false
            }
        };
        if !verified {
            return Err(MerchantError::InvalidCredentials);
        }
        self.ports.team.clear_failed_logins(&user.id).await?;
        self.issue_session(&user)
    }

    /// The account, the member and the go-live checklist.
    pub async fn account(&self, actor: &Actor) -> Result<AccountView, MerchantError> {
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        let documents = self.ports.merchants.list_documents(&merchant.id).await?;
        let checklist = golive::checklist(&merchant, &documents);
        Ok(AccountView {
            merchant,
            user: actor.user.clone(),
            documents,
            checklist,
        })
    }

    /// Saves the business profile and, when the registered name, number or date changed (or
    /// the last check could not reach the registry), checks the registry again.
    pub async fn update_business(
        &self,
        actor: &Actor,
        patch: BusinessPatch,
    ) -> Result<Merchant, MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.status == MerchantStatus::InReview {
            return Err(MerchantError::Conflict(
                "The profile cannot change while the account is in review".into(),
            ));
        }
        let mut profile = merchant.profile.clone();
        let mut errors = ValidationErrors::new();
        let optional = |errors: &mut ValidationErrors, field: &str, value: &Option<String>, max| {
            value.as_ref().map(|v| required_text(errors, field, v, max))
        };
        if let Some(name) =
            optional(&mut errors, "registeredName", &patch.registered_name, 200).flatten()
        {
            profile.registered_name = name;
        }
        if let Some(number) = &patch.registration_number
            && let Some(number) =
                check_registration_number(&mut errors, "registrationNumber", number)
        {
            profile.registration_number = number;
        }
        if let Some(date) = &patch.date_registered
            && let Some(date) =
                check_date_registered(&mut errors, "dateRegistered", date, self.now())
        {
            profile.date_registered = date;
        }
        if let Some(address) = optional(&mut errors, "address", &patch.address, 500) {
            profile.address = address;
        }
        if let Some(usecase) = optional(&mut errors, "usecase", &patch.usecase, 2000) {
            profile.usecase = usecase;
        }
        if let Some(description) = optional(&mut errors, "description", &patch.description, 2000) {
            profile.description = description;
        }
        if let Some(kind) = &patch.identity_type {
            match IdentityType::parse(kind) {
                Some(kind) => profile.identity_type = Some(kind),
                None => errors.push(
                    "identityType",
                    "must be passport, national_id or drivers_license",
                ),
            }
        }
        if let Some(number) = optional(&mut errors, "identityNumber", &patch.identity_number, 100) {
            profile.identity_number = number;
        }
        errors.finish()?;

        let registry_fields_changed = profile.registered_name != merchant.profile.registered_name
            || profile.registration_number != merchant.profile.registration_number
            || profile.date_registered != merchant.profile.date_registered;
        let needs_check = registry_fields_changed
            || matches!(
                profile.registry_status,
                RegistryStatus::Unverified | RegistryStatus::Unavailable
            );
        if needs_check {
            self.check_registry(&mut profile).await;
        }
        self.ports
            .merchants
            .save_profile(&merchant.id, &profile, self.now())
            .await?;
        self.load_merchant(&merchant.id).await
    }

    /// Stores a document after checking its type, format, size and first bytes.
    pub async fn upload_document(
        &self,
        actor: &Actor,
        upload: DocumentUpload,
    ) -> Result<Document, MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let mut errors = ValidationErrors::new();
        let document_type = DocumentType::parse(&upload.document_type);
        if document_type.is_none() {
            errors.push(
                "type",
                "must be business_registration, representative_id, tax_document or address_proof",
            );
        }
        let file_name = check_file_name(&mut errors, &upload.file_name);
        let format = DocumentFormat::parse_mime(&upload.mime_type);
        if format.is_none() {
            errors.push(
                "mimeType",
                "must be application/pdf, image/png or image/jpeg",
            );
        }
        if upload.declared_size > MAX_DOCUMENT_BYTES {
            errors.push(
                "size",
                format!("must be at most {MAX_DOCUMENT_BYTES} bytes"),
            );
        }
        if upload.content.len() as u64 != upload.declared_size {
            errors.push("size", "does not match the decoded content length");
        } else if upload.content.is_empty() {
            errors.push("contentBase64", "must not be empty");
        }
        if let Some(format) = format
            && !upload.content.is_empty()
            && !format.matches(&upload.content)
        {
            errors.push(
                "contentBase64",
                format!("is not a {} file", format.mime_type()),
            );
        }
        let (document_type, file_name, format) =
            errors.finish_with(|| Some((document_type?, file_name?, format?)))?;

        let id = self.ports.ids.next::<DocumentId>();
        let blob_key = format!(
            "merchants/{}/documents/{}.{}",
            actor.user.merchant_id,
            id,
            format.extension()
        );
        let sha256 = self.ports.hasher.hex("document-sha256", &upload.content);
        let size = upload.content.len() as u64;
        self.ports
            .blobs
            .put(&blob_key, upload.content)
            .await
            .map_err(MerchantError::unavailable)?;
        let document = Document {
            id,
            merchant_id: actor.user.merchant_id.clone(),
            document_type,
            file_name,
            format,
            size,
            sha256,
            blob_key,
            status: DocumentStatus::Uploaded,
            uploaded_at: self.now(),
        };
        self.ports.merchants.add_document(&document).await?;
        Ok(document)
    }

    /// Submits the account for go-live review: every unmet requirement is reported at once.
    pub async fn submit_for_review(&self, actor: &Actor) -> Result<Merchant, MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        match merchant.status {
            MerchantStatus::InReview => {
                return Err(MerchantError::Conflict(
                    "The account is already in review".into(),
                ));
            }
            MerchantStatus::Live => {
                return Err(MerchantError::Conflict(
                    "The account is already live".into(),
                ));
            }
            MerchantStatus::Onboarding | MerchantStatus::Rejected => {}
        }
        let documents = self.ports.merchants.list_documents(&merchant.id).await?;
        let unmet = golive::unmet_requirements(&merchant, &documents);
        if !unmet.is_empty() {
            return Err(MerchantError::GoLiveBlocked(unmet));
        }
        match self
            .ports
            .merchants
            .transition(
                &merchant.id,
                &[MerchantStatus::Onboarding, MerchantStatus::Rejected],
                MerchantStatus::InReview,
                self.now(),
                None,
            )
            .await
        {
            Err(RepositoryError::Conflict(conflicts::WRONG_STATUS)) => {
                return Err(MerchantError::Conflict(
                    "The account was submitted already".into(),
                ));
            }
            other => other?,
        }
        self.load_merchant(&merchant.id).await
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

    async fn send_email_link(
        &self,
        merchant: &Merchant,
        resend: Resend,
    ) -> Result<(), MerchantError> {
        let token = generate_link_token(self.ports.random.as_ref());
        self.store_code(
            CodePurpose::EmailVerification,
            merchant.id.as_str(),
            &token,
            self.settings.email_link_ttl,
            1,
            resend,
        )
        .await?;
        let link = format!("{}/verify-email?token={token}", self.settings.dashboard_url);
        self.ports
            .notifications
            .send(NewMessage {
                to: Address::Email(merchant.email.clone()),
                subject: "Confirm your email for idconsent".into(),
                body: format!(
                    "Hello {},\n\nConfirm the email address of {} by opening this link within 24 hours:\n\n{link}\n\nIf you did not register, ignore this message.",
                    merchant.contact_name, merchant.business_name
                ),
                code: None,
                link: Some(link),
            })
            .await
            .map_err(MerchantError::unavailable)?;
        Ok(())
    }

    async fn send_phone_code(
        &self,
        merchant: &Merchant,
        resend: Resend,
    ) -> Result<(), MerchantError> {
        let code = self.ports.random.digits(6);
        self.store_code(
            CodePurpose::PhoneVerification,
            merchant.id.as_str(),
            &code,
            self.settings.phone_code_ttl,
            self.settings.code_attempts,
            resend,
        )
        .await?;
        self.ports
            .notifications
            .send(NewMessage {
                to: Address::Phone(merchant.phone.clone()),
                subject: "idconsent verification code".into(),
                body: format!(
                    "Your idconsent verification code is {code}. It expires in 10 minutes."
                ),
                code: Some(code),
                link: None,
            })
            .await
            .map_err(MerchantError::unavailable)?;
        Ok(())
    }

    /// Stores a new code, replacing the subject's current one. With `Resend::AfterCoolDown` the
    /// replacement is refused (`TooSoon`) while the current code is younger than the resend
    /// interval — decided by the store in one statement, so concurrent resends send one code.
    pub(crate) async fn store_code(
        &self,
        purpose: CodePurpose,
        subject: &str,
        secret: &str,
        ttl: std::time::Duration,
        attempts: u32,
        resend: Resend,
    ) -> Result<(), MerchantError> {
        let now = self.now();
        let code = OneTimeCode {
            purpose,
            subject: subject.to_owned(),
            code_hash: self.ports.hasher.hex(purpose.as_str(), secret.as_bytes()),
            expires_at: now.plus(ttl),
            attempts_left: attempts,
            created_at: now,
        };
        match resend {
            Resend::Always => self.ports.codes.put(&code).await?,
            Resend::AfterCoolDown => {
                let cutoff = now.minus(self.settings.resend_interval);
                if !self.ports.codes.put_unless_newer(&code, cutoff).await? {
                    return Err(self.too_soon(purpose, subject).await?);
                }
            }
        }
        Ok(())
    }

    /// The refusal of a resend, with how long until the current code is old enough.
    async fn too_soon(
        &self,
        purpose: CodePurpose,
        subject: &str,
    ) -> Result<MerchantError, MerchantError> {
        let now = self.now();
        let next_allowed = self
            .ports
            .codes
            .find(purpose, subject)
            .await?
            .map_or(now, |current| {
                current.created_at.plus(self.settings.resend_interval)
            });
        Ok(MerchantError::TooSoon {
            retry_after_secs: next_allowed.since(now).as_secs().max(1),
        })
    }
}

/// Whether a new code may replace one sent moments ago.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resend {
    /// A first send, or one the user cannot trigger in a loop (an invitation by an admin).
    Always,
    /// A resend the user asked for: at most one per resend interval.
    AfterCoolDown,
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

fn check_file_name(errors: &mut ValidationErrors, value: &str) -> Option<String> {
    let name = required_text(errors, "fileName", value, 255)?;
    if name.contains(['/', '\\']) || name == "." || name == ".." {
        errors.push("fileName", "must be a file name without directories");
        return None;
    }
    Some(name)
}
