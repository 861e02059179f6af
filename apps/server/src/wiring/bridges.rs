//! One domain's port answered with another domain's data.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_consent::{RecipientDirectory, StoreError as ConsentStoreError};
use idconsent_enduser::ports::EnrollmentRepository;
use idconsent_kernel::PhoneNumber;
use idconsent_oauth::ports::{ClaimSource, StoreError as OAuthStoreError};
use idconsent_oauth::{ClaimKey, VerifiedValue};

/// Who may be asked in live: phones whose user completed an enrollment (CONTRACT §4).
#[derive(Debug, Clone)]
pub struct EnrolledRecipients {
    pub users: Arc<dyn EnrollmentRepository>,
}

#[async_trait]
impl RecipientDirectory for EnrolledRecipients {
    async fn is_enrolled(&self, phone: &PhoneNumber) -> Result<bool, ConsentStoreError> {
        let user = self
            .users
            .user_by_phone(phone)
            .await
            .map_err(|error| ConsentStoreError::Unavailable(Box::new(error)))?;
        Ok(user.is_some_and(|user| user.enrolled_at.is_some()))
    }
}

/// The same answer for mandates (a phone recipient must be enrolled in live).
#[async_trait]
impl idconsent_mandate::RecipientDirectory for EnrolledRecipients {
    async fn is_enrolled(
        &self,
        phone: &PhoneNumber,
    ) -> Result<bool, idconsent_mandate::StoreError> {
        let user = self
            .users
            .user_by_phone(phone)
            .await
            .map_err(|error| idconsent_mandate::StoreError::Unavailable(Box::new(error)))?;
        Ok(user.is_some_and(|user| user.enrolled_at.is_some()))
    }
}

/// The user's verified data for OAuth claims: the phone, proven by SMS code at enrollment.
/// Document claims join when identity verification exists.
#[derive(Debug, Clone)]
pub struct EnrolledClaims {
    pub users: Arc<dyn EnrollmentRepository>,
}

#[async_trait]
impl ClaimSource for EnrolledClaims {
    async fn verified(
        &self,
        phone: &PhoneNumber,
    ) -> Result<Vec<(ClaimKey, VerifiedValue)>, OAuthStoreError> {
        let user = self
            .users
            .user_by_phone(phone)
            .await
            .map_err(|error| OAuthStoreError::Unavailable(Box::new(error)))?;
        Ok(user
            .and_then(|user| user.enrolled_at.map(|at| (user.phone, at)))
            .map(|(phone, enrolled_at)| {
                vec![(
                    ClaimKey::PhoneNumber,
                    VerifiedValue {
                        value: phone.as_str().into(),
                        source: "sms_otp",
                        verified_at: enrolled_at,
                    },
                )]
            })
            .unwrap_or_default())
    }
}
