//! OAuth with PKCE: requests, codes, access tokens and their signing keys (shared by every
//! process through the database; see `idconsent_oauth::signing_keys`).

use std::sync::Arc;

use idconsent_jose::{DEFAULT_TOKEN_LIFETIME, Es256KeyGenerator, Es256KeyRing, Es256TokenSigner};
use idconsent_oauth::{
    OAuthPorts, OAuthService, OAuthSettings, Rotated, SigningKey, SigningKeyError,
    SigningKeySettings, SigningKeys,
};
use idconsent_store_diesel::{DieselEndUserStore, DieselOAuthStore, DieselSigningKeyStore};

use super::bridges::EnrolledClaims;
use super::consent::Consents;
use super::merchant::Merchants;
use super::{Shared, WiringError};

/// The signing keys of this process: the shared keys, reloaded into the signer's ring.
#[derive(Debug)]
pub struct OAuthKeys {
    keys: SigningKeys,
    signer: Arc<Es256TokenSigner>,
}

impl OAuthKeys {
    /// Reloads the shared keys: a key another process added is published (and, once active,
    /// signs) here too.
    pub async fn reload(&self) -> Result<(), SigningKeyError> {
        let ring = ring_of(self.keys.load().await?, self.keys.now())?;
        self.signer.replace_ring(ring);
        Ok(())
    }

    /// A new key, published everywhere at the next reload and signing after the activation
    /// delay.
    pub async fn rotate(&self) -> Result<Rotated, SigningKeyError> {
        let rotated = self.keys.rotate().await?;
        self.reload().await?;
        Ok(rotated)
    }

    /// Every key this process knows, oldest first.
    pub async fn list(&self) -> Result<Vec<SigningKey>, SigningKeyError> {
        self.keys.load().await
    }

    /// The signer of this process's tokens (ID tokens are signed with the same keys).
    pub fn signer(&self) -> Arc<Es256TokenSigner> {
        self.signer.clone()
    }

    pub fn reload_interval(&self) -> std::time::Duration {
        self.keys.settings().reload_interval
    }
}

fn ring_of(
    keys: Vec<SigningKey>,
    now: idconsent_kernel::Timestamp,
) -> Result<Es256KeyRing, SigningKeyError> {
    Es256KeyRing::from_signing_keys(keys, DEFAULT_TOKEN_LIFETIME, now)
        .map_err(|error| SigningKeyError::Unavailable(Box::new(error)))
}

/// The shared signing keys service alone (the admin subcommands use it without a server).
fn signing_keys(shared: &Shared) -> SigningKeys {
    let config = &shared.config;
    SigningKeys::new(
        Arc::new(DieselSigningKeyStore::new(shared.db.clone())),
        Arc::new(Es256KeyGenerator),
        shared.vault.clone(),
        shared.clock.clone(),
        SigningKeySettings {
            activation_delay: config.oauth.key_activation_delay,
            reload_interval: config.oauth.key_reload_interval,
            token_lifetime: DEFAULT_TOKEN_LIFETIME,
        },
    )
}

pub async fn build(
    shared: &Shared,
    consents: &Consents,
    merchants: &Merchants,
) -> Result<(Arc<OAuthService>, Arc<OAuthKeys>), WiringError> {
    let config = &shared.config;
    let keys = signing_keys(shared);
    if let Some(dir) = &config.oauth.import_keys_from {
        let imported = keys.import(Es256KeyRing::export_signing_keys(dir)?).await?;
        if imported > 0 {
            tracing::info!(keys = imported, dir = %dir.display(), "OAuth signing keys imported into the database");
        }
    }
    let ring = ring_of(keys.ensure().await?, shared.clock.now())?;
    let signer = Arc::new(Es256TokenSigner::new(
        ring,
        config.base_url.clone(),
        shared.clock.clone(),
    ));
    let service = Arc::new(OAuthService::new(
        OAuthPorts {
            consents: consents.service.clone(),
            directory: merchants.directory.clone(),
            store: Arc::new(DieselOAuthStore::new(shared.db.clone())),
            claims: Arc::new(EnrolledClaims {
                users: Arc::new(DieselEndUserStore::new(shared.db.clone())),
            }),
            signer: signer.clone(),
            vault: shared.vault.clone(),
            hasher: shared.hasher.clone(),
            clock: shared.clock.clone(),
            random: shared.random.clone(),
            ids: shared.ids.clone(),
        },
        OAuthSettings {
            code_ttl: config.oauth.code_ttl,
            ..OAuthSettings::new(config.base_url.clone())
        },
    ));
    Ok((service, Arc::new(OAuthKeys { keys, signer })))
}
