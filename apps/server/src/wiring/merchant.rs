//! Merchant accounts, applications and the request gate (signed requests, idempotency).

use std::sync::Arc;

use idconsent_access::{ApiAccess, GateChain, Idempotency, RequestGate};
use idconsent_approval::ApplicationDirectory;
use idconsent_auth_hmac::HmacRequestSignatures;
use idconsent_jose::HmacSessionTokens;
use idconsent_merchant::ports::BusinessRegistry;
use idconsent_merchant::{
    ApplicationSigningSecrets, MerchantDirectory, MerchantPorts, MerchantService, MerchantSettings,
};
use idconsent_notification::TeamDirectory;
use idconsent_password_argon2::{Argon2Passwords, HashingLimits};
use idconsent_registry::{HttpRegistry, SandboxRegistry};
use idconsent_store_diesel::DieselMerchantStore;
use secrecy::ExposeSecret;

use super::{Shared, WiringError};
use crate::config::RegistrySettings;

#[derive(Debug)]
pub struct Merchants {
    pub service: Arc<MerchantService>,
    /// Merchant and application names, for what approvals show.
    pub directory: Arc<dyn ApplicationDirectory>,
    /// The verified addresses of an application's team, for sandbox invitations.
    pub team: Arc<dyn TeamDirectory>,
    /// The secrets webhooks are signed with.
    pub signing_secrets: Arc<ApplicationSigningSecrets>,
    access: ApiAccess,
    idempotency: Idempotency,
}

impl Merchants {
    /// The one door of signed requests, with the deployment's gates.
    pub fn request_gate(&self, gates: GateChain) -> RequestGate {
        RequestGate {
            access: self.access.clone(),
            gates,
            idempotency: self.idempotency.clone(),
        }
    }
}

pub fn build(shared: &Shared) -> Result<Merchants, WiringError> {
    let config = &shared.config;
    let store = Arc::new(DieselMerchantStore::new(shared.db.clone()));
    let registry: Arc<dyn BusinessRegistry> = match &config.merchant.registry {
        RegistrySettings::Sandbox => Arc::new(SandboxRegistry),
        RegistrySettings::Http { url, auth_header } => Arc::new(HttpRegistry::new(
            url,
            auth_header.as_ref().map(|header| header.expose_secret()),
        )?),
    };
    let service = Arc::new(MerchantService::new(
        MerchantPorts {
            merchants: store.clone(),
            team: store.clone(),
            codes: store.clone(),
            applications: store.clone(),
            registry,
            passwords: Arc::new(Argon2Passwords::new(HashingLimits::new(usize::from(
                config.merchant.password_hash_concurrency,
            )))?),
            tokens: Arc::new(HmacSessionTokens::new(
                &shared.master.derive("merchant-session/hs256"),
            )?),
            vault: shared.vault.clone(),
            hasher: shared.hasher.clone(),
            blobs: shared.blobs.clone(),
            notifications: shared.notifier.clone(),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            random: shared.random.clone(),
        },
        MerchantSettings::new(
            config.merchant.dashboard_url.clone(),
            config.webhooks.allow_private_callbacks,
        ),
    ));
    let directory = Arc::new(MerchantDirectory::new(
        store.clone(),
        store.clone(),
        store.clone(),
    ));
    Ok(Merchants {
        service,
        directory: directory.clone(),
        team: directory,
        signing_secrets: Arc::new(ApplicationSigningSecrets::new(
            store.clone(),
            shared.vault.clone(),
            shared.clock.clone(),
        )),
        access: ApiAccess::new(
            store.clone(),
            shared.vault.clone(),
            shared.hasher.clone(),
            Arc::new(HmacRequestSignatures),
            store.clone(),
            shared.clock.clone(),
        ),
        idempotency: Idempotency::new(store, shared.hasher.clone(), shared.clock.clone()),
    })
}
