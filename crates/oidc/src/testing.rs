//! In-memory doubles: a [`ClientStore`] that passes the contract suite, and a fixed
//! [`ClientApplications`] directory.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::ApplicationId;

use idconsent_kernel::id::SessionId;

use crate::model::ClientConfig;
use crate::ports::{
    Authorization, AuthorizationStore, ClientApplication, ClientApplications, ClientStore,
    RefreshStore, RefreshToken, RefreshUse, StoreError,
};

fn poisoned() -> StoreError {
    StoreError::Unavailable("poisoned".into())
}

#[derive(Debug, Default)]
pub struct InMemoryClients {
    clients: Mutex<HashMap<ApplicationId, ClientConfig>>,
}

#[async_trait]
impl ClientStore for InMemoryClients {
    async fn insert(&self, config: &ClientConfig) -> Result<(), StoreError> {
        let mut clients = self.clients.lock().map_err(|_| poisoned())?;
        if clients.contains_key(&config.application_id) {
            return Err(StoreError::Duplicate);
        }
        clients.insert(config.application_id.clone(), config.clone());
        Ok(())
    }

    async fn update(&self, config: &ClientConfig) -> Result<bool, StoreError> {
        let mut clients = self.clients.lock().map_err(|_| poisoned())?;
        let Some(stored) = clients.get_mut(&config.application_id) else {
            return Ok(false);
        };
        *stored = ClientConfig {
            secret_hash: stored.secret_hash.take(),
            created_at: stored.created_at,
            ..config.clone()
        };
        Ok(true)
    }

    async fn set_secret(
        &self,
        application: &ApplicationId,
        secret_hash: Option<&str>,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut clients = self.clients.lock().map_err(|_| poisoned())?;
        let Some(stored) = clients.get_mut(application) else {
            return Ok(false);
        };
        stored.secret_hash = secret_hash.map(str::to_owned);
        stored.updated_at = at;
        Ok(true)
    }

    async fn find(&self, application: &ApplicationId) -> Result<Option<ClientConfig>, StoreError> {
        let clients = self.clients.lock().map_err(|_| poisoned())?;
        Ok(clients.get(application).cloned())
    }
}

/// A fixed set of applications.
#[derive(Debug, Default)]
pub struct FixedApplications {
    applications: Mutex<HashMap<ApplicationId, ClientApplication>>,
}

impl FixedApplications {
    pub fn add(&self, application: ClientApplication) {
        if let Ok(mut applications) = self.applications.lock() {
            applications.insert(application.id.clone(), application);
        }
    }
}

#[async_trait]
impl ClientApplications for FixedApplications {
    async fn find(&self, id: &ApplicationId) -> Result<Option<ClientApplication>, StoreError> {
        let applications = self.applications.lock().map_err(|_| poisoned())?;
        Ok(applications.get(id).cloned())
    }
}

#[derive(Debug, Default)]
pub struct InMemoryAuthorizations {
    rows: Mutex<HashMap<SessionId, Authorization>>,
}

#[async_trait]
impl AuthorizationStore for InMemoryAuthorizations {
    async fn insert(&self, authorization: &Authorization) -> Result<(), StoreError> {
        let mut rows = self.rows.lock().map_err(|_| poisoned())?;
        if rows.contains_key(&authorization.session_id) {
            return Err(StoreError::Duplicate);
        }
        rows.insert(authorization.session_id.clone(), authorization.clone());
        Ok(())
    }

    async fn find(&self, session: &SessionId) -> Result<Option<Authorization>, StoreError> {
        Ok(self
            .rows
            .lock()
            .map_err(|_| poisoned())?
            .get(session)
            .cloned())
    }

    async fn poll(
        &self,
        session: &SessionId,
        at: Timestamp,
        interval: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let mut rows = self.rows.lock().map_err(|_| poisoned())?;
        let Some(row) = rows.get_mut(session) else {
            return Ok(false);
        };
        if row
            .last_polled_at
            .is_some_and(|last| at < last.plus(interval))
        {
            return Ok(false);
        }
        row.last_polled_at = Some(at);
        Ok(true)
    }
}

#[derive(Debug, Default)]
pub struct InMemoryRefreshTokens {
    rows: Mutex<HashMap<String, RefreshToken>>,
}

impl InMemoryRefreshTokens {
    fn revoke(
        rows: &mut HashMap<String, RefreshToken>,
        family: &str,
        app: &ApplicationId,
        at: Timestamp,
    ) -> bool {
        let mut any = false;
        for token in rows.values_mut() {
            if token.family == family && &token.application_id == app && token.revoked_at.is_none()
            {
                token.revoked_at = Some(at);
                any = true;
            }
        }
        any
    }
}

#[async_trait]
impl RefreshStore for InMemoryRefreshTokens {
    async fn insert_refresh(&self, token: &RefreshToken) -> Result<(), StoreError> {
        let mut rows = self.rows.lock().map_err(|_| poisoned())?;
        if rows.contains_key(&token.hash) {
            return Err(StoreError::Duplicate);
        }
        rows.insert(token.hash.clone(), token.clone());
        Ok(())
    }

    async fn use_refresh(
        &self,
        hash: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<RefreshUse, StoreError> {
        let mut rows = self.rows.lock().map_err(|_| poisoned())?;
        let Some(token) = rows
            .get_mut(hash)
            .filter(|t| &t.application_id == application)
        else {
            return Ok(RefreshUse::Unknown);
        };
        if token.used_at.is_none() && token.revoked_at.is_none() {
            let read = token.clone();
            token.used_at = Some(at);
            return Ok(RefreshUse::Fresh(read));
        }
        let family = token.family.clone();
        Self::revoke(&mut rows, &family, application, at);
        Ok(RefreshUse::Replayed)
    }

    async fn revoke_family(
        &self,
        family: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut rows = self.rows.lock().map_err(|_| poisoned())?;
        Ok(Self::revoke(&mut rows, family, application, at))
    }

    async fn find_refresh(&self, hash: &str) -> Result<Option<RefreshToken>, StoreError> {
        Ok(self.rows.lock().map_err(|_| poisoned())?.get(hash).cloned())
    }
}

#[cfg(all(test, feature = "contract"))]
mod refresh_contract {
    use std::sync::Arc;

    use super::InMemoryRefreshTokens;
    use crate::ports::RefreshStore;

    async fn store() -> Option<(Arc<dyn RefreshStore>, ())> {
        Some((Arc::new(InMemoryRefreshTokens::default()), ()))
    }

    crate::oidc_refresh_store_contract!(store);
}

#[cfg(all(test, feature = "contract"))]
mod authorizations_contract {
    use std::sync::Arc;

    use super::InMemoryAuthorizations;
    use crate::ports::AuthorizationStore;

    async fn store() -> Option<(Arc<dyn AuthorizationStore>, ())> {
        Some((Arc::new(InMemoryAuthorizations::default()), ()))
    }

    crate::oidc_authorization_store_contract!(store);
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use super::InMemoryClients;
    use crate::ports::ClientStore;

    async fn store() -> Option<(Arc<dyn ClientStore>, ())> {
        Some((Arc::new(InMemoryClients::default()), ()))
    }

    crate::oidc_client_store_contract!(store);
}
