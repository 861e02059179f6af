//! [`InMemoryMerchants`] as the merchant and team repositories.

use super::*;

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
        self.change_merchant(id, at, |merchant| merchant.email_verified_at = Some(at))
    }

    async fn mark_phone_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        self.change_merchant(id, at, |merchant| merchant.phone_verified_at = Some(at))
    }

    async fn save_profile(
        &self,
        id: &MerchantId,
        profile: &BusinessProfile,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        self.change_merchant(id, at, |merchant| merchant.profile = profile.clone())
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
