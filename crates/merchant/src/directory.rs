//! Merchant data other domains need, answered through their ports: the names an approval
//! shows, the team a sandbox invitation may go to, the secrets webhooks are signed with.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_approval::{ApplicationDirectory, ApplicationNames, DirectoryError};
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{Clock, EmailAddress, SecretVault};
use idconsent_notification::{TeamDirectory, TeamDirectoryError};
use idconsent_webhook::{SigningSecrets, StoreError};

use crate::model::sealing;
use crate::ports::{ApplicationRepository, MerchantRepository, TeamRepository};

/// Which merchant and application an approval comes from, and who is on its team.
#[derive(Debug, Clone)]
pub struct MerchantDirectory {
    applications: Arc<dyn ApplicationRepository>,
    merchants: Arc<dyn MerchantRepository>,
    team: Arc<dyn TeamRepository>,
}

impl MerchantDirectory {
    pub fn new(
        applications: Arc<dyn ApplicationRepository>,
        merchants: Arc<dyn MerchantRepository>,
        team: Arc<dyn TeamRepository>,
    ) -> Self {
        Self {
            applications,
            merchants,
            team,
        }
    }
}

#[async_trait]
impl TeamDirectory for MerchantDirectory {
    async fn verified_addresses(
        &self,
        application: &ApplicationId,
    ) -> Result<Vec<EmailAddress>, TeamDirectoryError> {
        let failed = |error| TeamDirectoryError(Box::new(error));
        let Some(application) = self.applications.find(application).await.map_err(failed)? else {
            return Ok(Vec::new());
        };
        let Some(merchant) = self
            .merchants
            .find(&application.merchant_id)
            .await
            .map_err(failed)?
        else {
            return Ok(Vec::new());
        };
        let members = self.team.list(&merchant.id).await.map_err(failed)?;
        Ok(members
            .into_iter()
            .filter(|member| member.address_verified(&merchant))
            .map(|member| member.email)
            .collect())
    }
}

#[async_trait]
impl ApplicationDirectory for MerchantDirectory {
    async fn names(
        &self,
        application: &ApplicationId,
    ) -> Result<Option<ApplicationNames>, DirectoryError> {
        let failed = |error| DirectoryError(Box::new(error));
        let Some(application) = self.applications.find(application).await.map_err(failed)? else {
            return Ok(None);
        };
        let merchant = self
            .merchants
            .find(&application.merchant_id)
            .await
            .map_err(failed)?;
        Ok(merchant.map(|merchant| ApplicationNames {
            merchant: merchant.business_name,
            application: application.name,
        }))
    }
}

/// The webhook secrets an application signs with: the current one, and the previous one for a
/// day after a rotation.
#[derive(Debug, Clone)]
pub struct ApplicationSigningSecrets {
    applications: Arc<dyn ApplicationRepository>,
    vault: Arc<dyn SecretVault>,
    clock: Arc<dyn Clock>,
}

impl ApplicationSigningSecrets {
    pub fn new(
        applications: Arc<dyn ApplicationRepository>,
        vault: Arc<dyn SecretVault>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            applications,
            vault,
            clock,
        }
    }
}

#[async_trait]
impl SigningSecrets for ApplicationSigningSecrets {
    async fn for_application(
        &self,
        application: &ApplicationId,
    ) -> Result<Vec<String>, StoreError> {
        let application = self
            .applications
            .find(application)
            .await
            .map_err(|error| StoreError::Unavailable(Box::new(error)))?
            .ok_or(StoreError::NotFound)?;
        let binding = sealing::webhook_secret(&application.id);
        application
            .signing_webhook_secrets(self.clock.now())
            .into_iter()
            .map(|sealed| {
                let plain = self
                    .vault
                    .open(sealed, binding)
                    .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
                String::from_utf8(plain)
                    .map_err(|_| StoreError::Unavailable("webhook secret is not text".into()))
            })
            .collect()
    }
}
