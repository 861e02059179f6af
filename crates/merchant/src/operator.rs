//! The platform operator's go-live review.

use idconsent_kernel::id::{MerchantId, TypedId};
use idconsent_kernel::{Page, PageRequest, ValidationErrors};
use idconsent_notification::{Address, NewMessage};

use crate::error::MerchantError;
use crate::golive;
use crate::model::{Merchant, MerchantStatus};
use crate::ports::{RepositoryError, conflicts};
use crate::service::{MerchantService, required_text};

/// How often approval retries when applications change under it.
const APPROVAL_ATTEMPTS: usize = 5;

impl MerchantService {
    pub async fn list_merchants(
        &self,
        status: Option<&str>,
        page: PageRequest,
    ) -> Result<Page<Merchant>, MerchantError> {
        let status = status
            .map(|text| {
                MerchantStatus::parse(text).ok_or_else(|| {
                    ValidationErrors::single(
                        "status",
                        "must be onboarding, in_review, live or rejected",
                    )
                })
            })
            .transpose()?;
        Ok(self.ports.merchants.list(status, page).await?)
    }

    pub async fn merchant(&self, id: &str) -> Result<Merchant, MerchantError> {
        let id = MerchantId::parse(id).map_err(|_| MerchantError::NotFound("Merchant"))?;
        self.load_merchant(&id).await
    }

    /// Approves a merchant in review: live keys for every application, documents verified.
    /// The requirements are checked again, since the profile may have changed since submission.
    pub async fn approve_merchant(&self, id: &str) -> Result<Merchant, MerchantError> {
        let merchant = self.merchant(id).await?;
        if merchant.status != MerchantStatus::InReview {
            return Err(MerchantError::Conflict(format!(
                "Only merchants in review can be approved; this one is {}",
                merchant.status.as_str()
            )));
        }
        let documents = self.ports.merchants.list_documents(&merchant.id).await?;
        let unmet = golive::unmet_requirements(&merchant, &documents);
        if !unmet.is_empty() {
            return Err(MerchantError::GoLiveBlocked(unmet));
        }
        for _ in 0..APPROVAL_ATTEMPTS {
            let now = self.now();
            let applications = self
                .ports
                .applications
                .list(
                    &merchant.id,
                    idconsent_kernel::PageRequest::new(Some(1), Some(100))?,
                )
                .await?;
            let live_keys: Vec<_> = applications
                .items
                .iter()
                .map(|application| {
                    (
                        application.id.clone(),
                        self.new_live_key(&application.id, now).1,
                    )
                })
                .collect();
            match self
                .ports
                .merchants
                .approve(&merchant.id, &live_keys, now)
                .await
            {
                Err(RepositoryError::Conflict(conflicts::APPLICATIONS_CHANGED)) => continue,
                Err(RepositoryError::Conflict(conflicts::WRONG_STATUS)) => {
                    return Err(MerchantError::Conflict(
                        "The merchant is no longer in review".into(),
                    ));
                }
                other => other?,
            }
            let approved = self.load_merchant(&merchant.id).await?;
            self.tell_merchant(
                &approved,
                "Your idconsent account is live",
                format!(
                    "Hello {},\n\n{} is approved for live traffic. Live API keys (mk_live_…) are now \
                     available for each of your applications in the dashboard.\n",
                    approved.contact_name, approved.business_name
                ),
            )
            .await?;
            return Ok(approved);
        }
        Err(MerchantError::Conflict(
            "Applications kept changing during approval; try again".into(),
        ))
    }

    /// Rejects a merchant in review with a reason the merchant receives by email.
    pub async fn reject_merchant(&self, id: &str, reason: &str) -> Result<Merchant, MerchantError> {
        let mut errors = ValidationErrors::new();
        let reason = required_text(&mut errors, "reason", reason, 1000);
        let reason = errors.finish_with(|| reason)?;
        let merchant = self.merchant(id).await?;
        match self
            .ports
            .merchants
            .transition(
                &merchant.id,
                &[MerchantStatus::InReview],
                MerchantStatus::Rejected,
                self.now(),
                Some(&reason),
            )
            .await
        {
            Err(RepositoryError::Conflict(conflicts::WRONG_STATUS)) => {
                return Err(MerchantError::Conflict(format!(
                    "Only merchants in review can be rejected; this one is {}",
                    merchant.status.as_str()
                )));
            }
            other => other?,
        }
        let rejected = self.load_merchant(&merchant.id).await?;
        self.tell_merchant(
            &rejected,
            "Your idconsent go-live review",
            format!(
                "Hello {},\n\nThe go-live review of {} was not approved:\n\n{reason}\n\n\
                 Update your profile or documents and submit again from the dashboard.\n",
                rejected.contact_name, rejected.business_name
            ),
        )
        .await?;
        Ok(rejected)
    }

    async fn tell_merchant(
        &self,
        merchant: &Merchant,
        subject: &str,
        body: String,
    ) -> Result<(), MerchantError> {
        self.ports
            .notifications
            .send(NewMessage {
                to: Address::Email(merchant.email.clone()),
                subject: subject.to_owned(),
                body,
                code: None,
                link: None,
            })
            .await
            .map_err(MerchantError::unavailable)?;
        Ok(())
    }
}
