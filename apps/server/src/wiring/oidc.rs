//! The OpenID Connect front door: client configurations on the merchant's applications.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_kernel::id::ApplicationId;
use idconsent_merchant::ports::ApplicationRepository;
use idconsent_oauth::OAuthService;
use idconsent_oidc::{
    ClientApplication, ClientApplications, OidcClients, OidcProvider, ProviderPorts,
    ProviderSettings, StoreError,
};
use idconsent_store_diesel::{DieselMerchantStore, DieselOidcClientStore};

use super::{OAuthKeys, Shared};

/// Who owns an application and in which environment it acts, from the merchant store.
#[derive(Debug, Clone)]
struct MerchantApplications {
    applications: Arc<dyn ApplicationRepository>,
}

#[async_trait]
impl ClientApplications for MerchantApplications {
    async fn find(&self, id: &ApplicationId) -> Result<Option<ClientApplication>, StoreError> {
        let found = self
            .applications
            .find(id)
            .await
            .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
        Ok(found.map(|application| ClientApplication {
            environment: application.environment(),
            allowed_intents: application.request_types.iter().collect(),
            callback_url: application.callback_url.as_str().to_owned(),
            client_key: application.client_id,
            id: application.id,
            merchant_id: application.merchant_id,
        }))
    }
}

/// The OpenID Connect services: the client configurations and the provider.
pub struct Oidc {
    pub clients: Arc<OidcClients>,
    pub provider: Arc<OidcProvider>,
}

pub fn build(shared: &Shared, oauth: &Arc<OAuthService>, keys: &OAuthKeys) -> Oidc {
    let store = Arc::new(DieselOidcClientStore::new(shared.db.clone()));
    let clients = Arc::new(OidcClients::new(
        store.clone(),
        Arc::new(MerchantApplications {
            applications: Arc::new(DieselMerchantStore::new(shared.db.clone())),
        }),
        shared.hasher.clone(),
        shared.random.clone(),
        shared.clock.clone(),
    ));
    let issuer = shared.config.base_url.clone();
    let provider = Arc::new(OidcProvider::new(
        ProviderPorts {
            clients: clients.clone(),
            oauth: oauth.clone(),
            authorizations: store.clone(),
            refresh: store,
            id_tokens: keys.signer(),
            hasher: shared.hasher.clone(),
            random: shared.random.clone(),
            clock: shared.clock.clone(),
        },
        ProviderSettings {
            hosted_page_base: format!("{issuer}/oauth/authorize"),
            id_token_ttl: std::time::Duration::from_secs(3600),
            refresh_ttl: std::time::Duration::from_secs(30 * 24 * 3600),
            issuer,
        },
    ));
    Oidc { clients, provider }
}
