//! An in-memory [`MessageStore`] that passes the port contract: a verified double for tests.

use std::sync::Mutex;

use async_trait::async_trait;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::MessageId;

use crate::message::{Channel, DeliveryStatus, Message};
use crate::ports::{MessageStore, MessageStoreError};

#[derive(Debug, Default)]
pub struct InMemoryMessageStore {
    messages: Mutex<Vec<Message>>,
}

impl InMemoryMessageStore {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<Message>) -> R) -> R {
        let mut guard = self.messages.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}

#[async_trait]
impl MessageStore for InMemoryMessageStore {
    async fn insert(&self, message: &Message) -> Result<(), MessageStoreError> {
        self.with(|messages| {
            if messages.iter().any(|m| m.id == message.id) {
                return Err(MessageStoreError::Duplicate);
            }
            messages.push(message.clone());
            Ok(())
        })
    }

    async fn list_for(&self, to: &str, limit: u32) -> Result<Vec<Message>, MessageStoreError> {
        self.with(|messages| {
            let mut found: Vec<Message> = messages
                .iter()
                .filter(|m| m.to.as_str() == to)
                .cloned()
                .collect();
            found.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            found.truncate(limit as usize);
            Ok(found)
        })
    }

    async fn lease_due(
        &self,
        channel: Channel,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Message>, MessageStoreError> {
        self.with(|messages| {
            let mut due: Vec<&mut Message> = messages
                .iter_mut()
                .filter(|m| {
                    m.status == DeliveryStatus::Queued
                        && m.channel() == channel
                        && m.next_attempt_at <= now
                })
                .collect();
            due.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            Ok(due
                .into_iter()
                .take(limit as usize)
                .map(|m| {
                    m.next_attempt_at = lease_until;
                    m.clone()
                })
                .collect())
        })
    }

    async fn mark_delivered(
        &self,
        id: &MessageId,
        at: Timestamp,
        erase_content: bool,
    ) -> Result<(), MessageStoreError> {
        self.with(|messages| {
            let message = messages
                .iter_mut()
                .find(|m| &m.id == id)
                .ok_or(MessageStoreError::NotFound)?;
            message.status = DeliveryStatus::Delivered;
            message.attempts += 1;
            message.delivered_at = Some(at);
            if erase_content {
                message.body.clear();
                message.code = None;
                message.link = None;
            }
            Ok(())
        })
    }

    async fn record_failure(
        &self,
        id: &MessageId,
        error: &str,
        next_attempt_at: Option<Timestamp>,
    ) -> Result<(), MessageStoreError> {
        self.with(|messages| {
            let message = messages
                .iter_mut()
                .find(|m| &m.id == id)
                .ok_or(MessageStoreError::NotFound)?;
            message.attempts += 1;
            message.last_error = Some(error.to_owned());
            match next_attempt_at {
                Some(next) => message.next_attempt_at = next,
                None => message.status = DeliveryStatus::Failed,
            }
            Ok(())
        })
    }

    async fn count_queued(&self, channel: Channel) -> Result<u64, MessageStoreError> {
        self.with(|messages| {
            Ok(messages
                .iter()
                .filter(|m| m.status == DeliveryStatus::Queued && m.channel() == channel)
                .count() as u64)
        })
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract_tests {
    use std::sync::Arc;

    async fn store() -> Option<(Arc<dyn crate::MessageStore>, ())> {
        Some((Arc::new(super::InMemoryMessageStore::default()), ()))
    }

    crate::message_store_contract!(store);
}

/// An in-memory [`idconsent_kernel::Throttle`] that passes the kernel's throttle contract.
#[derive(Debug, Default)]
pub struct InMemoryThrottle {
    counters: Mutex<std::collections::HashMap<(String, i64), u64>>,
}

#[async_trait]
impl idconsent_kernel::Throttle for InMemoryThrottle {
    async fn take(
        &self,
        key: &str,
        window_start: Timestamp,
        limit: u64,
    ) -> Result<bool, idconsent_kernel::ThrottleError> {
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let used = counters
            .entry((key.to_owned(), window_start.as_millis()))
            .or_default();
        if *used >= limit {
            return Ok(false);
        }
        *used += 1;
        Ok(true)
    }

    async fn forget_before(
        &self,
        before: Timestamp,
    ) -> Result<u64, idconsent_kernel::ThrottleError> {
        let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let count = counters.len();
        counters.retain(|(_, start), _| *start >= before.as_millis());
        Ok((count - counters.len()) as u64)
    }
}

/// A [`crate::TeamDirectory`] of fixed verified addresses, for other crates' service tests.
#[derive(Debug, Default)]
pub struct FixedTeam(pub Vec<idconsent_kernel::EmailAddress>);

#[async_trait]
impl crate::TeamDirectory for FixedTeam {
    async fn verified_addresses(
        &self,
        _: &idconsent_kernel::id::ApplicationId,
    ) -> Result<Vec<idconsent_kernel::EmailAddress>, crate::TeamDirectoryError> {
        Ok(self.0.clone())
    }
}

/// Invitations as in dev mode (any address, to the dev mailbox) with a generous allowance.
pub fn dev_invitations(clock: std::sync::Arc<dyn idconsent_kernel::Clock>) -> crate::Invitations {
    use std::sync::Arc;
    let limits = crate::SendLimits::new(
        Arc::new(InMemoryThrottle::default()),
        clock,
        crate::SendLimitSettings {
            per_client: 1_000_000,
            global: 1_000_000,
        },
    );
    crate::Invitations::new(
        Arc::new(limits),
        Arc::new(FixedTeam::default()),
        crate::SandboxRecipients::DevMailbox,
    )
}
