//! The wire forms of merchant resources.

use idconsent_kernel::Timestamp;
use idconsent_merchant::AccountView;
use idconsent_merchant::golive::Requirement;
use idconsent_merchant::model::{Document, Merchant, MerchantUser};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MerchantBody {
    id: String,
    business_name: String,
    contact_name: String,
    email: String,
    phone: String,
    entity_type: String,
    industry: String,
    /// `onboarding`, `in_review`, `live` or `rejected`.
    status: &'static str,
    plan: String,
    email_verified: bool,
    phone_verified: bool,
    business: BusinessBody,
    #[schema(value_type = Option<String>, format = DateTime)]
    submitted_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    decided_at: Option<Timestamp>,
    rejection_reason: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    updated_at: Timestamp,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessBody {
    registered_name: String,
    registration_number: String,
    /// `YYYY-MM-DD`.
    date_registered: String,
    address: Option<String>,
    usecase: Option<String>,
    description: Option<String>,
    /// `passport`, `national_id` or `drivers_license`.
    identity_type: Option<&'static str>,
    /// The last four characters of the representative's identity number; the rest is never shown.
    identity_number_last4: Option<String>,
    /// The corporate registry's verdict: `unverified`, `verified`, `not_found`, `mismatch`, `unavailable`.
    registry_verification: &'static str,
    #[schema(value_type = Option<String>, format = DateTime)]
    registry_checked_at: Option<Timestamp>,
}

impl From<&Merchant> for MerchantBody {
    fn from(merchant: &Merchant) -> Self {
        let profile = &merchant.profile;
        Self {
            id: merchant.id.to_string(),
            business_name: merchant.business_name.clone(),
            contact_name: merchant.contact_name.clone(),
            email: merchant.email.to_string(),
            phone: merchant.phone.to_string(),
            entity_type: merchant.entity_type.clone(),
            industry: merchant.industry.clone(),
            status: merchant.status.as_str(),
            plan: merchant.plan.clone(),
            email_verified: merchant.email_verified_at.is_some(),
            phone_verified: merchant.phone_verified_at.is_some(),
            business: BusinessBody {
                registered_name: profile.registered_name.clone(),
                registration_number: profile.registration_number.clone(),
                date_registered: profile.date_registered.to_string(),
                address: profile.address.clone(),
                usecase: profile.usecase.clone(),
                description: profile.description.clone(),
                identity_type: profile.identity_type.map(|t| t.as_str()),
                identity_number_last4: profile.identity_number.as_ref().map(|number| {
                    let chars: Vec<char> = number.chars().collect();
                    chars[chars.len().saturating_sub(4)..].iter().collect()
                }),
                registry_verification: profile.registry_status.as_str(),
                registry_checked_at: profile.registry_checked_at,
            },
            submitted_at: merchant.submitted_at,
            decided_at: merchant.decided_at,
            rejection_reason: merchant.rejection_reason.clone(),
            created_at: merchant.created_at,
            updated_at: merchant.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserBody {
    id: String,
    email: String,
    name: String,
    /// `owner`, `admin`, `developer` or `viewer`.
    role: &'static str,
    /// `invited`, `active` or `removed`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
}

impl From<&MerchantUser> for UserBody {
    fn from(user: &MerchantUser) -> Self {
        Self {
            id: user.id.to_string(),
            email: user.email.to_string(),
            name: user.name.clone(),
            role: user.role.as_str(),
            status: user.status.as_str(),
            created_at: user.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentBody {
    id: String,
    /// `business_registration`, `representative_id`, `tax_document` or `address_proof`.
    #[serde(rename = "type")]
    document_type: &'static str,
    file_name: String,
    mime_type: &'static str,
    size: u64,
    /// Keyed SHA-256 fingerprint of the content, to recognise re-uploads.
    fingerprint: String,
    /// `uploaded` or `verified`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    uploaded_at: Timestamp,
}

impl From<&Document> for DocumentBody {
    fn from(document: &Document) -> Self {
        Self {
            id: document.id.to_string(),
            document_type: document.document_type.as_str(),
            file_name: document.file_name.clone(),
            mime_type: document.format.mime_type(),
            size: document.size,
            fingerprint: document.sha256.clone(),
            status: document.status.as_str(),
            uploaded_at: document.uploaded_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequirementBody {
    /// A stable key, the `field` of the go-live 422 details.
    key: &'static str,
    description: &'static str,
    met: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoLiveBody {
    /// The account status (`onboarding`, `in_review`, `live`, `rejected`).
    status: &'static str,
    /// Whether every requirement is met.
    ready: bool,
    requirements: Vec<RequirementBody>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountBody {
    merchant: MerchantBody,
    user: UserBody,
    documents: Vec<DocumentBody>,
    go_live: GoLiveBody,
}

impl From<&AccountView> for AccountBody {
    fn from(view: &AccountView) -> Self {
        let requirements: Vec<RequirementBody> = view
            .checklist
            .iter()
            .map(|(requirement, met)| requirement_body(*requirement, *met))
            .collect();
        Self {
            merchant: (&view.merchant).into(),
            user: (&view.user).into(),
            documents: view.documents.iter().map(Into::into).collect(),
            go_live: GoLiveBody {
                status: view.merchant.status.as_str(),
                ready: requirements.iter().all(|r| r.met),
                requirements,
            },
        }
    }
}

fn requirement_body(requirement: Requirement, met: bool) -> RequirementBody {
    RequirementBody {
        key: requirement.key(),
        description: requirement.description(),
        met,
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionBody {
    /// A merchant JWT: `Authorization: Bearer <token>` on J endpoints.
    pub token: String,
    /// Seconds until the token expires.
    pub expires_in: u64,
}
