//! An in-memory [`ConfirmationStore`] for service tests; it passes the same contract suite as
//! the diesel adapter. One lock around everything makes each operation atomic.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_kernel::Timestamp;

use crate::guesses::{GuessPolicy, GuessState, Taken, give_back};
use crate::ports::{CeremonyStep, Confirmation, ConfirmationStore, Issued, NewCode, StoreError};

#[derive(Debug, Default)]
pub struct InMemoryConfirmations {
    subjects: Mutex<BTreeMap<String, Confirmation>>,
}

impl InMemoryConfirmations {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Confirmation>> {
        self.subjects.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn locked_at(record: &Confirmation, now: Timestamp) -> Option<Timestamp> {
    record.locked_until.filter(|until| *until > now)
}

#[async_trait]
impl ConfirmationStore for InMemoryConfirmations {
    async fn issue_code(
        &self,
        code: &NewCode,
        resend_cutoff: Timestamp,
        now: Timestamp,
    ) -> Result<Issued, StoreError> {
        let mut subjects = self.lock();
        let mut guesses = Vec::new();
        if let Some(existing) = subjects.get(&code.subject) {
            if let Some(until) = locked_at(existing, now) {
                return Ok(Issued::Locked { until });
            }
            if existing.code_sent_at > resend_cutoff {
                return Ok(Issued::TooSoon {
                    last_sent_at: existing.code_sent_at,
                });
            }
            guesses = existing.guesses.clone();
        }
        subjects.insert(
            code.subject.clone(),
            Confirmation {
                subject: code.subject.clone(),
                code_hash: Some(code.code_hash.clone()),
                code_expires_at: code.expires_at,
                attempts_left: code.attempts,
                code_sent_at: code.sent_at,
                locked_until: None,
                token_hash: None,
                token_expires_at: None,
                ceremony: None,
                passkey: None,
                passkey_counter: 0,
                context_hash: None,
                guesses,
            },
        );
        Ok(Issued::Stored)
    }

    async fn take_attempt(
        &self,
        subject: &str,
        policy: &GuessPolicy,
        now: Timestamp,
    ) -> Result<Taken, StoreError> {
        let mut subjects = self.lock();
        let Some(record) = subjects.get_mut(subject) else {
            return Ok(Taken::NoCode);
        };
        let state = GuessState {
            code_hash: record.code_hash.clone(),
            code_expires_at: record.code_expires_at,
            attempts_left: record.attempts_left,
            locked_until: record.locked_until,
            guesses: record.guesses.clone(),
        };
        let (kept, taken) = policy.judge(&state, now);
        if let Some(kept) = kept {
            record.attempts_left = kept.attempts_left;
            record.locked_until = kept.locked_until;
            record.guesses = kept.guesses;
        }
        Ok(taken)
    }

    async fn confirm(
        &self,
        subject: &str,
        code_hash: &str,
        taken_at: Timestamp,
        token_hash: &str,
        token_expires_at: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut subjects = self.lock();
        match subjects.get_mut(subject) {
            Some(record) if record.code_hash.as_deref() == Some(code_hash) => {
                give_back(&mut record.guesses, taken_at);
                record.code_hash = None;
                record.locked_until = None;
                record.token_hash = Some(token_hash.to_owned());
                record.token_expires_at = Some(token_expires_at);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn find(&self, subject: &str) -> Result<Option<Confirmation>, StoreError> {
        Ok(self.lock().get(subject).cloned())
    }

    async fn save_ceremony(
        &self,
        subject: &str,
        token_hash: &str,
        now: Timestamp,
        step: &CeremonyStep,
    ) -> Result<bool, StoreError> {
        let mut subjects = self.lock();
        match subjects.get_mut(subject) {
            Some(record)
                if record.token_hash.as_deref() == Some(token_hash)
                    && record.token_expires_at.is_some_and(|at| at > now) =>
            {
                record.ceremony = Some(step.ceremony.clone());
                record.passkey = step.passkey.clone();
                record.passkey_counter = step.passkey_counter;
                record.context_hash = step.context_hash.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn consume(&self, subject: &str, token_hash: &str) -> Result<bool, StoreError> {
        let mut subjects = self.lock();
        match subjects.get_mut(subject) {
            Some(record) if record.token_hash.as_deref() == Some(token_hash) => {
                record.code_hash = None;
                record.token_hash = None;
                record.token_expires_at = None;
                record.ceremony = None;
                record.passkey = None;
                record.passkey_counter = 0;
                record.context_hash = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn forget_before(&self, before: Timestamp) -> Result<u64, StoreError> {
        let mut subjects = self.lock();
        let old = subjects.len();
        subjects.retain(|_, record| {
            record.code_expires_at >= before
                || record.token_expires_at.is_some_and(|at| at >= before)
                || record.locked_until.is_some_and(|at| at >= before)
        });
        Ok((old - subjects.len()) as u64)
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use super::InMemoryConfirmations;
    use crate::ports::ConfirmationStore;

    async fn store() -> Option<(Arc<dyn ConfirmationStore>, ())> {
        Some((Arc::new(InMemoryConfirmations::default()), ()))
    }

    crate::confirmation_store_contract!(store);
}
