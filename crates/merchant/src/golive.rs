//! The go-live rules of spec §4.3, as one pure function.

use crate::model::{Document, DocumentType, Merchant, RegistryStatus};

/// One requirement for live approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Requirement {
    BusinessDescription,
    UseCase,
    RegistrationNumberVerified,
    BusinessAddress,
    BusinessRegistrationDocument,
    RepresentativeIdentity,
    RepresentativeIdDocument,
    EmailVerified,
    PhoneVerified,
}

impl Requirement {
    pub const ALL: [Requirement; 9] = [
        Requirement::BusinessDescription,
        Requirement::UseCase,
        Requirement::RegistrationNumberVerified,
        Requirement::BusinessAddress,
        Requirement::BusinessRegistrationDocument,
        Requirement::RepresentativeIdentity,
        Requirement::RepresentativeIdDocument,
        Requirement::EmailVerified,
        Requirement::PhoneVerified,
    ];

    /// A stable key (the `field` of a go-live 422 detail).
    pub fn key(self) -> &'static str {
        match self {
            Requirement::BusinessDescription => "description",
            Requirement::UseCase => "usecase",
            Requirement::RegistrationNumberVerified => "registrationNumber",
            Requirement::BusinessAddress => "address",
            Requirement::BusinessRegistrationDocument => "documents.business_registration",
            Requirement::RepresentativeIdentity => "identityNumber",
            Requirement::RepresentativeIdDocument => "documents.representative_id",
            Requirement::EmailVerified => "email",
            Requirement::PhoneVerified => "phone",
        }
    }

    /// What to do about it, for people.
    pub fn description(self) -> &'static str {
        match self {
            Requirement::BusinessDescription => "add a business description",
            Requirement::UseCase => "describe the use case",
            Requirement::RegistrationNumberVerified => {
                "the registration number must be verified with the business registry"
            }
            Requirement::BusinessAddress => "add the business address",
            Requirement::BusinessRegistrationDocument => {
                "upload the business registration certificate"
            }
            Requirement::RepresentativeIdentity => {
                "add the representative's identity type and number"
            }
            Requirement::RepresentativeIdDocument => {
                "upload the representative's identity document"
            }
            Requirement::EmailVerified => "verify the account email",
            Requirement::PhoneVerified => "verify the account phone number",
        }
    }

    pub fn is_met(self, merchant: &Merchant, documents: &[Document]) -> bool {
        let filled =
            |value: &Option<String>| value.as_deref().is_some_and(|v| !v.trim().is_empty());
        let has_document = |kind: DocumentType| {
            documents
                .iter()
                .any(|document| document.document_type == kind)
        };
        let profile = &merchant.profile;
        match self {
            Requirement::BusinessDescription => filled(&profile.description),
            Requirement::UseCase => filled(&profile.usecase),
            Requirement::RegistrationNumberVerified => {
                profile.registry_status == RegistryStatus::Verified
            }
            Requirement::BusinessAddress => filled(&profile.address),
            Requirement::BusinessRegistrationDocument => {
                has_document(DocumentType::BusinessRegistration)
            }
            Requirement::RepresentativeIdentity => {
                profile.identity_type.is_some() && filled(&profile.identity_number)
            }
            Requirement::RepresentativeIdDocument => has_document(DocumentType::RepresentativeId),
            Requirement::EmailVerified => merchant.email_verified_at.is_some(),
            Requirement::PhoneVerified => merchant.phone_verified_at.is_some(),
        }
    }
}

/// Every requirement with whether it is met, in the spec's order.
pub fn checklist(merchant: &Merchant, documents: &[Document]) -> Vec<(Requirement, bool)> {
    Requirement::ALL
        .into_iter()
        .map(|requirement| (requirement, requirement.is_met(merchant, documents)))
        .collect()
}

/// The requirements still unmet; empty means the merchant may go live.
pub fn unmet_requirements(merchant: &Merchant, documents: &[Document]) -> Vec<Requirement> {
    checklist(merchant, documents)
        .into_iter()
        .filter_map(|(requirement, met)| (!met).then_some(requirement))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;
    use idconsent_kernel::id::{DocumentId, MerchantId, TypedId};
    use idconsent_kernel::{CalendarDate, EmailAddress, PhoneNumber, Timestamp};

    fn merchant() -> Merchant {
        Merchant {
            id: MerchantId::parse("mer_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            business_name: "Example Shop".into(),
            contact_name: "Ada".into(),
            entity_type: "llc".into(),
            industry: "retail".into(),
            email: EmailAddress::parse("ada@shop.example").unwrap(),
            phone: PhoneNumber::parse("+15551234567").unwrap(),
            email_verified_at: None,
            phone_verified_at: None,
            profile: BusinessProfile {
                registered_name: "Example Shop LLC".into(),
                registration_number: "123456789".into(),
                date_registered: CalendarDate::parse("2019-03-04").unwrap(),
                address: None,
                usecase: None,
                description: None,
                identity_type: None,
                identity_number: None,
                registry_status: RegistryStatus::Unverified,
                registry_checked_at: None,
            },
            status: MerchantStatus::Onboarding,
            submitted_at: None,
            decided_at: None,
            rejection_reason: None,
            plan: "free".into(),
            created_at: Timestamp::from_millis(0),
            updated_at: Timestamp::from_millis(0),
        }
    }

    fn document(kind: DocumentType) -> Document {
        Document {
            id: DocumentId::parse("doc_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            merchant_id: merchant().id,
            document_type: kind,
            file_name: "x.pdf".into(),
            format: DocumentFormat::Pdf,
            size: 10,
            sha256: String::new(),
            blob_key: "k".into(),
            status: DocumentStatus::Uploaded,
            uploaded_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn a_new_merchant_misses_everything() {
        assert_eq!(
            unmet_requirements(&merchant(), &[]),
            Requirement::ALL.to_vec()
        );
    }

    #[test]
    fn a_complete_merchant_misses_nothing() {
        let mut m = merchant();
        m.email_verified_at = Some(Timestamp::from_millis(1));
        m.phone_verified_at = Some(Timestamp::from_millis(1));
        m.profile.address = Some("1 Main St".into());
        m.profile.usecase = Some("logins".into());
        m.profile.description = Some("shop".into());
        m.profile.identity_type = Some(IdentityType::Passport);
        m.profile.identity_number = Some("X123".into());
        m.profile.registry_status = RegistryStatus::Verified;
        let documents = [
            document(DocumentType::BusinessRegistration),
            document(DocumentType::RepresentativeId),
        ];
        assert!(unmet_requirements(&m, &documents).is_empty());
        // Blank text does not count, and an identity number needs its type.
        m.profile.description = Some("   ".into());
        m.profile.identity_type = None;
        assert_eq!(
            unmet_requirements(&m, &documents),
            vec![
                Requirement::BusinessDescription,
                Requirement::RepresentativeIdentity
            ]
        );
    }

    #[test]
    fn optional_documents_do_not_count() {
        let unmet = unmet_requirements(&merchant(), &[document(DocumentType::TaxDocument)]);
        assert!(unmet.contains(&Requirement::BusinessRegistrationDocument));
    }
}
