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
}

#[async_trait]
impl MerchantRepository for InMemoryMerchants {
    async fn create(
        &self,
        merchant: &Merchant,
        owner: &MerchantUser,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        if state.merchants.contains_key(&merchant.id) {
            return Err(RepositoryError::Duplicate);
        }
        state.check_new_member(owner, Some(&merchant.id))?;
        state
            .merchants
            .insert(merchant.id.clone(), merchant.clone());
        state.users.insert(owner.id.clone(), owner.clone());
        Ok(())
    }

    async fn find(&self, id: &MerchantId) -> Result<Option<Merchant>, RepositoryError> {
        Ok(self.lock().merchants.get(id).cloned())
    }

    async fn list(
        &self,
        status: Option<MerchantStatus>,
        page: PageRequest,
    ) -> Result<Page<Merchant>, RepositoryError> {
        let mut merchants: Vec<Merchant> = self
            .lock()
            .merchants
            .values()
            .filter(|m| status.is_none_or(|status| m.status == status))
            .cloned()
            .collect();
        // Newest first.
        merchants.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(page_of(merchants, page))
    }

    async fn mark_email_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let merchant = state.merchant_mut(id)?;
        merchant.email_verified_at = Some(at);
        merchant.updated_at = at;
        Ok(())
    }

    async fn mark_phone_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let merchant = state.merchant_mut(id)?;
        merchant.phone_verified_at = Some(at);
        merchant.updated_at = at;
        Ok(())
    }

    async fn save_profile(
        &self,
        id: &MerchantId,
        profile: &BusinessProfile,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let merchant = state.merchant_mut(id)?;
        merchant.profile = profile.clone();
        merchant.updated_at = at;
        Ok(())
    }

    async fn transition(
        &self,
        id: &MerchantId,
        from: &[MerchantStatus],
        to: MerchantStatus,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let merchant = state.merchant_mut(id)?;
        if !from.contains(&merchant.status) {
            return Err(RepositoryError::Conflict(conflicts::WRONG_STATUS));
        }
        merchant.status = to;
        merchant.updated_at = at;
        match to {
            MerchantStatus::InReview => merchant.submitted_at = Some(at),
            MerchantStatus::Live | MerchantStatus::Rejected => {
                merchant.decided_at = Some(at);
                merchant.rejection_reason = reason.map(str::to_owned);
            }
            MerchantStatus::Onboarding => {}
        }
        Ok(())
    }

    async fn approve(
        &self,
        id: &MerchantId,
        live_keys: &[(ApplicationId, NewKey)],
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let merchant = state.merchants.get(id).ok_or(RepositoryError::NotFound)?;
        if merchant.status != MerchantStatus::InReview {
            return Err(RepositoryError::Conflict(conflicts::WRONG_STATUS));
        }
        // Every key is checked, in order, before anything changes.
        let mut new_hashes: Vec<&str> = Vec::with_capacity(live_keys.len());
        for (application, key) in live_keys {
            let owned = state
                .applications
                .get(application)
                .is_some_and(|a| a.merchant_id == *id);
            if !owned {
                // A key for an application this merchant does not have.
                return Err(RepositoryError::Conflict(conflicts::APPLICATIONS_CHANGED));
            }
            if state.credentials.contains_key(&key.hash) || new_hashes.contains(&key.hash.as_str())
            {
                return Err(RepositoryError::Duplicate);
            }
            new_hashes.push(&key.hash);
        }
        let left_without_live_key = state.applications.values().any(|application| {
            application.merchant_id == *id
                && application.live_key.is_none()
                && !live_keys.iter().any(|(keyed, key)| {
                    *keyed == application.id && key.environment == Environment::Live
                })
        });
        if left_without_live_key {
            return Err(RepositoryError::Conflict(conflicts::APPLICATIONS_CHANGED));
        }

        let merchant = state.merchant_mut(id)?;
        merchant.status = MerchantStatus::Live;
        merchant.decided_at = Some(at);
        // A reason from an earlier rejection no longer applies.
        merchant.rejection_reason = None;
        merchant.updated_at = at;
        for document in state.documents.values_mut() {
            if document.merchant_id == *id {
                document.status = DocumentStatus::Verified;
            }
        }
        for (application, key) in live_keys {
            state.replace_key(application, key);
        }
        Ok(())
    }

    async fn add_document(&self, document: &Document) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        if state.documents.contains_key(&document.id) {
            return Err(RepositoryError::Duplicate);
        }
        if !state.merchants.contains_key(&document.merchant_id) {
            return Err(RepositoryError::NotFound);
        }
        state
            .documents
            .insert(document.id.clone(), document.clone());
        Ok(())
    }

    async fn list_documents(
        &self,
        merchant: &MerchantId,
    ) -> Result<Vec<Document>, RepositoryError> {
        let mut documents: Vec<Document> = self
            .lock()
            .documents
            .values()
            .filter(|d| d.merchant_id == *merchant)
            .cloned()
            .collect();
        documents.sort_by(|a, b| (a.uploaded_at, &a.id).cmp(&(b.uploaded_at, &b.id)));
        Ok(documents)
    }
}

#[async_trait]
impl TeamRepository for InMemoryMerchants {
    async fn add(&self, user: &MerchantUser) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        state.check_new_member(user, None)?;
        state.users.insert(user.id.clone(), user.clone());
        Ok(())
    }

    async fn find(&self, id: &MerchantUserId) -> Result<Option<MerchantUser>, RepositoryError> {
        Ok(self.lock().users.get(id).cloned())
    }

    async fn find_by_email(
        &self,
        email: &EmailAddress,
    ) -> Result<Option<MerchantUser>, RepositoryError> {
        Ok(self
            .lock()
            .users
            .values()
            .find(|u| u.status != UserStatus::Removed && u.email == *email)
            .cloned())
    }

    async fn list(&self, merchant: &MerchantId) -> Result<Vec<MerchantUser>, RepositoryError> {
        let mut team: Vec<MerchantUser> = self
            .lock()
            .users
            .values()
            .filter(|u| u.merchant_id == *merchant && u.status != UserStatus::Removed)
            .cloned()
            .collect();
        team.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(team)
    }

    async fn activate(
        &self,
        id: &MerchantUserId,
        password_hash: &str,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let user = state.user_mut(id)?;
        if user.status != UserStatus::Invited {
            return Err(RepositoryError::Conflict(conflicts::NOT_INVITED));
        }
        user.password_hash = Some(password_hash.to_owned());
        user.status = UserStatus::Active;
        user.updated_at = at;
        Ok(())
    }

    async fn remove(
        &self,
        merchant: &MerchantId,
        id: &MerchantUserId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let member = state
            .users
            .get(id)
            .filter(|u| u.merchant_id == *merchant)
            .ok_or(RepositoryError::NotFound)?;
        if member.status == UserStatus::Removed {
            // Already gone: nothing to change.
            return Ok(());
        }
        let is_active_owner = member.role == Role::Owner && member.status == UserStatus::Active;
        if is_active_owner {
            let active_owners = state
                .users
                .values()
                .filter(|u| {
                    u.merchant_id == *merchant
                        && u.role == Role::Owner
                        && u.status == UserStatus::Active
                })
                .count();
            if active_owners <= 1 {
                return Err(RepositoryError::Conflict(conflicts::LAST_OWNER));
            }
        }
        let member = state.user_mut(id)?;
        member.status = UserStatus::Removed;
        member.updated_at = at;
        Ok(())
    }

    async fn take_login_attempt(
        &self,
        id: &MerchantUserId,
        policy: LoginPolicy,
        now: Timestamp,
    ) -> Result<LoginAdmission, RepositoryError> {
        let mut state = self.lock();
        let user = state.user_mut(id)?;
        let current = LoginAttempts {
            taken: user.failed_logins,
            locked_until: user.locked_until,
        };
        let admission = policy.judge(current, now);
        if let LoginAdmission::Admitted { state } = admission {
            user.failed_logins = state.taken;
            user.locked_until = state.locked_until;
        }
        Ok(admission)
    }

    async fn clear_failed_logins(&self, id: &MerchantUserId) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let user = state.user_mut(id)?;
        user.failed_logins = 0;
        user.locked_until = None;
        Ok(())
    }
}

fn code_key(purpose: CodePurpose, subject: &str) -> (&'static str, String) {
    (purpose.as_str(), subject.to_owned())
}

#[async_trait]
impl CodeRepository for InMemoryMerchants {
    async fn put(&self, code: &OneTimeCode) -> Result<(), RepositoryError> {
        self.lock()
            .codes
            .insert(code_key(code.purpose, &code.subject), code.clone());
        Ok(())
    }

    async fn find(
        &self,
        purpose: CodePurpose,
        subject: &str,
    ) -> Result<Option<OneTimeCode>, RepositoryError> {
        Ok(self.lock().codes.get(&code_key(purpose, subject)).cloned())
    }

    async fn find_by_hash(
        &self,
        purpose: CodePurpose,
        code_hash: &str,
    ) -> Result<Option<OneTimeCode>, RepositoryError> {
        Ok(self
            .lock()
            .codes
            .values()
            .find(|c| c.purpose == purpose && c.code_hash == code_hash)
            .cloned())
    }

    async fn put_unless_newer(
        &self,
        code: &OneTimeCode,
        cutoff: Timestamp,
    ) -> Result<bool, RepositoryError> {
        let mut state = self.lock();
        let key = code_key(code.purpose, &code.subject);
        if state
            .codes
            .get(&key)
            .is_some_and(|existing| existing.created_at > cutoff)
        {
            return Ok(false);
        }
        state.codes.insert(key, code.clone());
        Ok(true)
    }

    async fn take_attempt(
        &self,
        purpose: CodePurpose,
        subject: &str,
        now: Timestamp,
    ) -> Result<Option<OneTimeCode>, RepositoryError> {
        let mut state = self.lock();
        Ok(state
            .codes
            .get_mut(&code_key(purpose, subject))
            .filter(|code| code.attempts_left > 0 && code.expires_at > now)
            .map(|code| {
                code.attempts_left -= 1;
                code.clone()
            }))
    }

    async fn consume(&self, purpose: CodePurpose, subject: &str) -> Result<bool, RepositoryError> {
        Ok(self
            .lock()
            .codes
            .remove(&code_key(purpose, subject))
            .is_some())
    }
}

#[async_trait]
impl ApplicationRepository for InMemoryMerchants {
    async fn create(
        &self,
        application: &Application,
        sandbox_key_hash: &str,
        live_key_hash: Option<&str>,
    ) -> Result<(), RepositoryError> {
        let mut keys = vec![NewKey {
            environment: Environment::Sandbox,
            hash: sandbox_key_hash.to_owned(),
            sealed: application.sandbox_key.sealed.clone(),
            generated_at: application.sandbox_key.generated_at,
        }];
        match (&application.live_key, live_key_hash) {
            (Some(record), Some(hash)) => keys.push(NewKey {
                environment: Environment::Live,
                hash: hash.to_owned(),
                sealed: record.sealed.clone(),
                generated_at: record.generated_at,
            }),
            (None, None) => {}
            _ => {
                return Err(RepositoryError::Unavailable(
                    "an application's live key record and live key hash come together".into(),
                ));
            }
        }
        let mut state = self.lock();
        let merchant = state
            .merchants
            .get(&application.merchant_id)
            .ok_or(RepositoryError::NotFound)?;
        // Checked under the same lock as `approve`: no application is left without a live key.
        if (merchant.status == MerchantStatus::Live) != application.live_key.is_some() {
            return Err(RepositoryError::Conflict(conflicts::WRONG_STATUS));
        }
        let taken = state.applications.contains_key(&application.id)
            || state
                .applications
                .values()
                .any(|a| a.client_id == application.client_id)
            || keys
                .iter()
                .any(|key| state.credentials.contains_key(&key.hash))
            || live_key_hash == Some(sandbox_key_hash);
        if taken {
            return Err(RepositoryError::Duplicate);
        }
        state
            .applications
            .insert(application.id.clone(), application.clone());
        for key in &keys {
            state.replace_key(&application.id, key);
        }
        Ok(())
    }

    async fn find(&self, id: &ApplicationId) -> Result<Option<Application>, RepositoryError> {
        Ok(self.lock().applications.get(id).cloned())
    }

    async fn list(
        &self,
        merchant: &MerchantId,
        page: PageRequest,
    ) -> Result<Page<Application>, RepositoryError> {
        let mut applications: Vec<Application> = self
            .lock()
            .applications
            .values()
            .filter(|a| a.merchant_id == *merchant)
            .cloned()
            .collect();
        applications.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(page_of(applications, page))
    }

    async fn update(&self, application: &Application) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let stored = state.application_mut(&application.id)?;
        stored.name = application.name.clone();
        stored.callback_url = application.callback_url.clone();
        stored.redirect_uris = application.redirect_uris.clone();
        stored.request_types = application.request_types.clone();
        stored.updated_at = application.updated_at;
        Ok(())
    }

    async fn rotate_key(&self, id: &ApplicationId, key: &NewKey) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let application = state
            .applications
            .get(id)
            .ok_or(RepositoryError::NotFound)?;
        if key.environment == Environment::Live && application.live_key.is_none() {
            return Err(RepositoryError::Conflict(conflicts::NO_LIVE_CREDENTIALS));
        }
        if state.credentials.contains_key(&key.hash) {
            return Err(RepositoryError::Duplicate);
        }
        state.replace_key(id, key);
        Ok(())
    }

    async fn rotate_webhook_secret(
        &self,
        id: &ApplicationId,
        new: &Sealed,
        previous_expires_at: Timestamp,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let application = state.application_mut(id)?;
        let previous = std::mem::replace(&mut application.webhook_secret, new.clone());
        application.previous_webhook_secret = Some(RetiringSecret {
            sealed: previous,
            expires_at: previous_expires_at,
        });
        application.updated_at = at;
        Ok(())
    }

    async fn rotate_secret(
        &self,
        id: &ApplicationId,
        new: &Sealed,
        previous_expires_at: Timestamp,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let mut state = self.lock();
        let application = state.application_mut(id)?;
        let previous = std::mem::replace(&mut application.secret, new.clone());
        application.previous_secret = Some(RetiringSecret {
            sealed: previous,
            expires_at: previous_expires_at,
        });
        application.updated_at = at;
        Ok(())
    }

    async fn find_by_key_hash(
        &self,
        hash: &str,
    ) -> Result<Option<(Application, Environment)>, RepositoryError> {
        let state = self.lock();
        Ok(state
            .credentials
            .get(hash)
            .filter(|credential| credential.current)
            .and_then(|credential| {
                state
                    .applications
                    .get(&credential.application)
                    .map(|application| (application.clone(), credential.environment))
            }))
    }
}

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
