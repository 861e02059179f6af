//! The ports of the notification domain.

use std::fmt;

use async_trait::async_trait;
use idconsent_kernel::id::MessageId;
use idconsent_kernel::{ErrorCategory, Timestamp};

use crate::message::{Channel, Message, NewMessage};

/// Durable storage of outgoing messages (the outbox).
///
/// Contract (checked by [`crate::contract`]):
/// - `insert` stores a message exactly as given; inserting an id twice is `Duplicate`.
/// - `list_for` returns every message to that address string, oldest first, at most `limit`.
/// - `lease_due` returns queued messages of one channel whose `next_attempt_at <= now`, oldest
///   first, at most `limit`, and atomically moves their `next_attempt_at` to `lease_until`, so a
///   concurrent or later caller does not receive them again before the lease passes. If the
///   lessee dies, the message becomes due again: delivery is at-least-once.
/// - `mark_delivered` sets status delivered, counts the attempt and, with `erase_content`,
///   empties body, code and link. `record_failure` counts the attempt, keeps the error and
///   either schedules the next attempt or, with `None`, marks the message failed. Both are
///   `NotFound` for an unknown id.
/// - `count_queued` counts queued messages of a channel.
#[async_trait]
pub trait MessageStore: Send + Sync + fmt::Debug {
    async fn insert(&self, message: &Message) -> Result<(), MessageStoreError>;

    async fn list_for(&self, to: &str, limit: u32) -> Result<Vec<Message>, MessageStoreError>;

    async fn lease_due(
        &self,
        channel: Channel,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Message>, MessageStoreError>;

    async fn mark_delivered(
        &self,
        id: &MessageId,
        at: Timestamp,
        erase_content: bool,
    ) -> Result<(), MessageStoreError>;

    async fn record_failure(
        &self,
        id: &MessageId,
        error: &str,
        next_attempt_at: Option<Timestamp>,
    ) -> Result<(), MessageStoreError>;

    async fn count_queued(&self, channel: Channel) -> Result<u64, MessageStoreError>;
}

#[derive(Debug, thiserror::Error)]
pub enum MessageStoreError {
    #[error("a message with this id already exists")]
    Duplicate,
    #[error("no such message")]
    NotFound,
    #[error("message storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Hands one message to the outside world.
#[async_trait]
pub trait MessageTransport: Send + Sync + fmt::Debug {
    fn channel(&self) -> Channel;

    /// A short name for logs and `/readyz` (`smtp`, `http-sms`, `dev-mailbox`).
    fn name(&self) -> &'static str;

    /// Whether the message content must stay in the outbox after delivery. Only the dev
    /// mailbox, where the stored message is what people read, says yes.
    fn keeps_content(&self) -> bool {
        false
    }

    async fn deliver(&self, message: &Message) -> Result<(), TransportError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// Worth another try later (timeouts, 5xx, connection refused).
    #[error("temporary delivery failure: {0}")]
    Temporary(String),
    /// Will never work (rejected recipient, 4xx); the message is marked failed.
    #[error("permanent delivery failure: {0}")]
    Permanent(String),
}

/// What other domains call to send a message. Queues it; delivery happens in the background.
#[async_trait]
pub trait NotificationSender: Send + Sync + fmt::Debug {
    async fn send(&self, message: NewMessage) -> Result<MessageId, NotifyError>;
}

#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("the message could not be queued")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl NotifyError {
    pub fn category(&self) -> ErrorCategory {
        ErrorCategory::Internal
    }
}

pub use idconsent_kernel::Nudge;
