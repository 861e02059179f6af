//! An in-memory merchant store — accounts, documents, teams, one-time codes, applications and
//! their API keys — for service tests. It passes the same contract suite as the diesel adapter:
//! one lock around all of it makes every operation as atomic as the contract asks, and every
//! write checks all of its rules before it changes anything, so a refused write changes nothing.
//!
//! Like the database, it keeps every API key ever issued: a rotated-out key no longer finds its
//! application, and its hash stays taken.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::id::{ApplicationId, DocumentId, MerchantId, MerchantUserId};
use idconsent_kernel::{EmailAddress, Environment, Page, PageRequest, Sealed, Timestamp};

use crate::login::{LoginAdmission, LoginAttempts, LoginPolicy};
use crate::model::{
    Application, BusinessProfile, Document, DocumentStatus, KeyRecord, Merchant, MerchantStatus,
    MerchantUser, RetiringSecret, Role, UserStatus,
};
use crate::ports::{
    ApplicationRepository, CodePurpose, CodeRepository, MerchantRepository, NewKey, OneTimeCode,
    RepositoryError, TeamRepository, conflicts,
};

/// An API key as issued: whose, for which environment, and whether it is still the current one.
#[derive(Debug, Clone)]
struct Credential {
    application: ApplicationId,
    environment: Environment,
    current: bool,
}

#[derive(Debug, Default)]
struct State {
    merchants: BTreeMap<MerchantId, Merchant>,
    documents: BTreeMap<DocumentId, Document>,
    users: BTreeMap<MerchantUserId, MerchantUser>,
    /// By purpose (its stable text) and subject: at most one code each.
    codes: BTreeMap<(&'static str, String), OneTimeCode>,
    /// With their current keys.
    applications: BTreeMap<ApplicationId, Application>,
    /// Every key ever issued, by hash.
    credentials: BTreeMap<String, Credential>,
}

impl State {
    /// Whether a member who is not removed has this email (removed members free theirs).
    fn email_taken(&self, email: &EmailAddress) -> bool {
        self.users
            .values()
            .any(|u| u.status != UserStatus::Removed && u.email == *email)
    }

    /// The checks of inserting a member: unique id, known merchant (`pending` is one being
    /// created with it), unique email unless the member is removed.
    fn check_new_member(
        &self,
        user: &MerchantUser,
        pending: Option<&MerchantId>,
    ) -> Result<(), RepositoryError> {
        if self.users.contains_key(&user.id) {
            return Err(RepositoryError::Duplicate);
        }
        if user.status != UserStatus::Removed && self.email_taken(&user.email) {
            return Err(RepositoryError::Duplicate);
        }
        let merchant_known = self.merchants.contains_key(&user.merchant_id)
            || pending.is_some_and(|id| *id == user.merchant_id);
        if !merchant_known {
            return Err(RepositoryError::NotFound);
        }
        Ok(())
    }

    fn merchant_mut(&mut self, id: &MerchantId) -> Result<&mut Merchant, RepositoryError> {
        self.merchants.get_mut(id).ok_or(RepositoryError::NotFound)
    }

    fn user_mut(&mut self, id: &MerchantUserId) -> Result<&mut MerchantUser, RepositoryError> {
        self.users.get_mut(id).ok_or(RepositoryError::NotFound)
    }

    fn application_mut(&mut self, id: &ApplicationId) -> Result<&mut Application, RepositoryError> {
        self.applications
            .get_mut(id)
            .ok_or(RepositoryError::NotFound)
    }

    /// Makes `key` the current key of its environment: the previous one is rotated out (its
    /// hash stays taken). The caller has checked that the application exists and the hash is
    /// free.
    fn replace_key(&mut self, application: &ApplicationId, key: &NewKey) {
        for credential in self.credentials.values_mut() {
            if credential.application == *application && credential.environment == key.environment {
                credential.current = false;
            }
        }
        self.credentials.insert(
            key.hash.clone(),
            Credential {
                application: application.clone(),
                environment: key.environment,
                current: true,
            },
        );
        let record = KeyRecord {
            sealed: key.sealed.clone(),
            generated_at: key.generated_at,
        };
        if let Some(stored) = self.applications.get_mut(application) {
            match key.environment {
                Environment::Sandbox => stored.sandbox_key = record,
                Environment::Live => stored.live_key = Some(record),
            }
        }
    }
}

/// The slice of `items` (already in list order) that `page` asks for.
fn page_of<T>(items: Vec<T>, page: PageRequest) -> Page<T> {
    let total = items.len() as u64;
    let offset = usize::try_from(page.offset()).unwrap_or(usize::MAX);
    Page {
        items: items
            .into_iter()
            .skip(offset)
            .take(page.limit() as usize)
            .collect(),
        request: page,
        total,
    }
}

/// Every merchant store port in memory; clone the `Arc` into each port of a service
/// (`MerchantStores::from_one` does that for the contract suite).
#[derive(Debug, Default)]
pub struct InMemoryMerchants {
    state: Mutex<State>,
}

impl InMemoryMerchants {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `change` to a merchant and stamps `updated_at`, as the adapter's updates do.
    fn change_merchant(
        &self,
        id: &MerchantId,
        at: Timestamp,
        change: impl FnOnce(&mut Merchant),
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let merchant = state.merchant_mut(id)?;
        change(merchant);
        merchant.updated_at = at;
        Ok(())
    }
}

mod accounts;
mod apps;

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use super::InMemoryMerchants;
    use crate::contract::MerchantStores;

    async fn stores() -> Option<(MerchantStores, ())> {
        Some((
            MerchantStores::from_one(Arc::new(InMemoryMerchants::new())),
            (),
        ))
    }

    crate::merchant_store_contract!(stores);
}
