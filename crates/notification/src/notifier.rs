use std::sync::Arc;

use async_trait::async_trait;
use idconsent_kernel::id::MessageId;
use idconsent_kernel::{Clock, IdGenerator};

use crate::message::{Address, DeliveryStatus, Message, NewMessage};
use crate::ports::{MessageStore, MessageStoreError, NotificationSender, NotifyError, Nudge};

/// Queues messages in the outbox and wakes the dispatcher.
#[derive(Debug, Clone)]
pub struct Notifier {
    store: Arc<dyn MessageStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    nudge: Option<Arc<dyn Nudge>>,
}

impl Notifier {
    pub fn new(
        store: Arc<dyn MessageStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        nudge: Option<Arc<dyn Nudge>>,
    ) -> Self {
        Self {
            store,
            clock,
            ids,
            nudge,
        }
    }

    /// What was sent to `to`, oldest first, at most `limit` (the dev mailbox).
    pub async fn sent_to(
        &self,
        to: &Address,
        limit: u32,
    ) -> Result<Vec<Message>, MessageStoreError> {
        self.store.list_for(to.as_str(), limit).await
    }
}

#[async_trait]
impl NotificationSender for Notifier {
    async fn send(&self, message: NewMessage) -> Result<MessageId, NotifyError> {
        let now = self.clock.now();
        let queued = Message {
            id: self.ids.next(),
            to: message.to,
            subject: message.subject,
            body: message.body,
            code: message.code,
            link: message.link,
            status: DeliveryStatus::Queued,
            attempts: 0,
            last_error: None,
            next_attempt_at: now,
            created_at: now,
            delivered_at: None,
        };
        self.store
            .insert(&queued)
            .await
            .map_err(|error| match error {
                MessageStoreError::Unavailable(source) => NotifyError::Unavailable(source),
                other => NotifyError::Unavailable(Box::new(other)),
            })?;
        if let Some(nudge) = &self.nudge {
            nudge.nudge();
        }
        Ok(queued.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::InMemoryMessageStore;
    use idconsent_kernel::{ManualClock, SeededRandom, Timestamp, UlidGenerator};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, Default)]
    struct CountingNudge(AtomicUsize);

    impl Nudge for CountingNudge {
        fn nudge(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn send_queues_the_message_due_now_and_nudges() {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(5_000)));
        let store = Arc::new(InMemoryMessageStore::default());
        let nudge = Arc::new(CountingNudge::default());
        let notifier = Notifier::new(
            store.clone(),
            clock.clone(),
            Arc::new(UlidGenerator::new(clock, Arc::new(SeededRandom::new(3)))),
            Some(nudge.clone()),
        );
        let id = notifier
            .send(NewMessage {
                to: Address::parse("+15551234567").unwrap(),
                subject: "Code".into(),
                body: "Your code is 111222".into(),
                code: Some("111222".into()),
                link: None,
            })
            .await
            .unwrap();
        let listed = store.list_for("+15551234567", 10).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, id);
        assert_eq!(listed[0].status, DeliveryStatus::Queued);
        assert_eq!(listed[0].next_attempt_at, Timestamp::from_millis(5_000));
        assert_eq!(nudge.0.load(Ordering::SeqCst), 1);
    }
}
