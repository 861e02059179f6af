//! The account as its team sees it, the business profile, documents and the go-live submission.

use idconsent_kernel::ValidationErrors;
use idconsent_kernel::id::DocumentId;

use crate::error::MerchantError;
use crate::golive::{self, Requirement};
use crate::model::{
    Document, DocumentFormat, DocumentStatus, DocumentType, IdentityType, Merchant, MerchantStatus,
    MerchantUser, Permission, RegistryStatus,
};
use crate::ports::{RepositoryError, conflicts};
use crate::service::{Actor, MerchantService, required_text};

use super::{check_date_registered, check_registration_number};

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

impl MerchantService {
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
}

fn check_file_name(errors: &mut ValidationErrors, value: &str) -> Option<String> {
    let name = required_text(errors, "fileName", value, 255)?;
    if name.contains(['/', '\\']) || name == "." || name == ".." {
        errors.push("fileName", "must be a file name without directories");
        return None;
    }
    Some(name)
}
