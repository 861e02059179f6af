//! [`InMemoryMerchants`] as the one-time code and application repositories.

use super::*;

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
