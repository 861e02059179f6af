use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::{Clock, Timestamp};

use crate::message::Channel;
use crate::ports::{MessageStore, MessageStoreError, MessageTransport, TransportError};

/// When to try again after a failed delivery, and when to give up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after each failed attempt; its length is the number of retries.
    pub waits: Vec<Duration>,
}

impl RetryPolicy {
    /// The next attempt after `attempts_so_far` failed attempts, or `None` to give up.
    pub fn next_attempt(&self, now: Timestamp, attempts_so_far: u32) -> Option<Timestamp> {
        let index = usize::try_from(attempts_so_far).ok()?.checked_sub(1)?;
        self.waits.get(index).map(|wait| now.plus(*wait))
    }
}

impl Default for RetryPolicy {
    /// Codes and links go stale within minutes; a message not out within about an hour fails.
    fn default() -> Self {
        Self {
            waits: [10, 60, 300, 1_800]
                .into_iter()
                .map(Duration::from_secs)
                .collect(),
        }
    }
}

/// What one dispatch round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchReport {
    pub delivered: usize,
    pub retried: usize,
    pub failed: usize,
}

impl DispatchReport {
    pub fn handled(&self) -> usize {
        self.delivered + self.retried + self.failed
    }
}

/// Moves queued messages to their transports.
///
/// One round (`dispatch_due`) leases due messages of every channel that has a transport,
/// delivers them one by one and records each outcome. Channels without a transport are left
/// alone: their messages wait, queued, until one is configured.
#[derive(Debug, Clone)]
pub struct Dispatcher {
    store: Arc<dyn MessageStore>,
    transports: BTreeMap<Channel, Arc<dyn MessageTransport>>,
    clock: Arc<dyn Clock>,
    retry: RetryPolicy,
    lease: Duration,
    batch: u32,
}

impl Dispatcher {
    pub fn new(
        store: Arc<dyn MessageStore>,
        transports: Vec<Arc<dyn MessageTransport>>,
        clock: Arc<dyn Clock>,
        retry: RetryPolicy,
    ) -> Self {
        Self {
            store,
            transports: transports.into_iter().map(|t| (t.channel(), t)).collect(),
            clock,
            retry,
            // Longer than any transport may take for one message (SMTP and HTTP time out at 30 s).
            lease: Duration::from_secs(120),
            batch: 50,
        }
    }

    /// Channels that have no transport: their messages stay queued.
    pub fn missing_channels(&self) -> Vec<Channel> {
        Channel::ALL
            .into_iter()
            .filter(|channel| !self.transports.contains_key(channel))
            .collect()
    }

    /// The transport name per configured channel, for `/readyz` and start-up logs.
    pub fn transport_names(&self) -> Vec<(Channel, &'static str)> {
        self.transports
            .iter()
            .map(|(channel, transport)| (*channel, transport.name()))
            .collect()
    }

    pub async fn dispatch_due(&self) -> Result<DispatchReport, MessageStoreError> {
        let mut report = DispatchReport::default();
        for (channel, transport) in &self.transports {
            let now = self.clock.now();
            let leased = self
                .store
                .lease_due(*channel, now, now.plus(self.lease), self.batch)
                .await?;
            for message in leased {
                let outcome = transport.deliver(&message).await;
                let now = self.clock.now();
                match outcome {
                    Ok(()) => {
                        self.store
                            .mark_delivered(&message.id, now, !transport.keeps_content())
                            .await?;
                        report.delivered += 1;
                    }
                    Err(error) => {
                        let attempts = message.attempts + 1;
                        let next = match &error {
                            TransportError::Temporary(_) => self.retry.next_attempt(now, attempts),
                            TransportError::Permanent(_) => None,
                        };
                        self.store
                            .record_failure(&message.id, &error.to_string(), next)
                            .await?;
                        if next.is_some() {
                            report.retried += 1;
                        } else {
                            report.failed += 1;
                        }
                    }
                }
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Address, DeliveryStatus, Message};
    use crate::ports::NotificationSender;
    use crate::testing::InMemoryMessageStore;
    use crate::{NewMessage, Notifier};
    use async_trait::async_trait;
    use idconsent_kernel::{ManualClock, SeededRandom, UlidGenerator};
    use std::sync::Mutex;

    #[derive(Debug)]
    struct ScriptedTransport {
        channel: Channel,
        outcomes: Mutex<Vec<Result<(), TransportError>>>,
        keeps_content: bool,
    }

    #[async_trait]
    impl MessageTransport for ScriptedTransport {
        fn channel(&self) -> Channel {
            self.channel
        }
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn keeps_content(&self) -> bool {
            self.keeps_content
        }
        async fn deliver(&self, _message: &Message) -> Result<(), TransportError> {
            self.outcomes.lock().unwrap().remove(0)
        }
    }

    struct Fixture {
        clock: Arc<ManualClock>,
        store: Arc<InMemoryMessageStore>,
        notifier: Notifier,
    }

    fn fixture() -> Fixture {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let store = Arc::new(InMemoryMessageStore::default());
        let ids = Arc::new(UlidGenerator::new(
            clock.clone(),
            Arc::new(SeededRandom::new(9)),
        ));
        let notifier = Notifier::new(store.clone(), clock.clone(), ids, None);
        Fixture {
            clock,
            store,
            notifier,
        }
    }

    fn sms() -> NewMessage {
        NewMessage {
            to: Address::parse("+15551234567").unwrap(),
            subject: "Code".into(),
            body: "Your code is 424242".into(),
            code: Some("424242".into()),
            link: None,
        }
    }

    fn dispatcher(
        f: &Fixture,
        outcomes: Vec<Result<(), TransportError>>,
        keeps: bool,
    ) -> Dispatcher {
        let transport = Arc::new(ScriptedTransport {
            channel: Channel::Sms,
            outcomes: Mutex::new(outcomes),
            keeps_content: keeps,
        });
        Dispatcher::new(
            f.store.clone(),
            vec![transport],
            f.clock.clone(),
            RetryPolicy {
                waits: vec![Duration::from_secs(10)],
            },
        )
    }

    async fn only_message(f: &Fixture) -> Message {
        f.store
            .list_for("+15551234567", 10)
            .await
            .unwrap()
            .remove(0)
    }

    #[tokio::test]
    async fn a_real_transport_delivers_and_erases_the_content() {
        let f = fixture();
        f.notifier.send(sms()).await.unwrap();
        let report = dispatcher(&f, vec![Ok(())], false)
            .dispatch_due()
            .await
            .unwrap();
        assert_eq!(report.delivered, 1);
        let message = only_message(&f).await;
        assert_eq!(message.status, DeliveryStatus::Delivered);
        assert_eq!(message.body, "");
        assert_eq!(message.code, None);
    }

    #[tokio::test]
    async fn the_dev_mailbox_keeps_the_content() {
        let f = fixture();
        f.notifier.send(sms()).await.unwrap();
        dispatcher(&f, vec![Ok(())], true)
            .dispatch_due()
            .await
            .unwrap();
        assert_eq!(only_message(&f).await.code.as_deref(), Some("424242"));
    }

    #[tokio::test]
    async fn temporary_failures_retry_on_schedule_then_fail() {
        let f = fixture();
        f.notifier.send(sms()).await.unwrap();
        let outcomes = vec![
            Err(TransportError::Temporary("timeout".into())),
            Err(TransportError::Temporary("timeout".into())),
        ];
        let dispatcher = dispatcher(&f, outcomes, false);
        assert_eq!(dispatcher.dispatch_due().await.unwrap().retried, 1);
        // Not due yet: nothing happens.
        assert_eq!(dispatcher.dispatch_due().await.unwrap().handled(), 0);
        f.clock.advance(Duration::from_secs(10));
        assert_eq!(dispatcher.dispatch_due().await.unwrap().failed, 1);
        let message = only_message(&f).await;
        assert_eq!(message.status, DeliveryStatus::Failed);
        assert_eq!(message.attempts, 2);
        assert!(message.last_error.unwrap().contains("timeout"));
    }

    #[tokio::test]
    async fn permanent_failures_fail_at_once() {
        let f = fixture();
        f.notifier.send(sms()).await.unwrap();
        let report = dispatcher(
            &f,
            vec![Err(TransportError::Permanent("no such number".into()))],
            false,
        )
        .dispatch_due()
        .await
        .unwrap();
        assert_eq!(report.failed, 1);
    }

    #[tokio::test]
    async fn a_channel_without_transport_keeps_its_messages_queued() {
        let f = fixture();
        let mut email = sms();
        email.to = Address::parse("ops@example.com").unwrap();
        f.notifier.send(email).await.unwrap();
        let dispatcher = dispatcher(&f, vec![], false);
        assert_eq!(dispatcher.missing_channels(), vec![Channel::Email]);
        assert_eq!(dispatcher.dispatch_due().await.unwrap().handled(), 0);
        assert_eq!(f.store.count_queued(Channel::Email).await.unwrap(), 1);
    }

    #[test]
    fn retry_policy_counts_attempts() {
        let policy = RetryPolicy {
            waits: vec![Duration::from_secs(1), Duration::from_secs(5)],
        };
        let now = Timestamp::from_millis(0);
        assert_eq!(
            policy.next_attempt(now, 1),
            Some(Timestamp::from_millis(1_000))
        );
        assert_eq!(
            policy.next_attempt(now, 2),
            Some(Timestamp::from_millis(5_000))
        );
        assert_eq!(policy.next_attempt(now, 3), None);
    }
}
