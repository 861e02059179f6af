//! The [`MessageTransport`] contract, for transports that reach a real receiver.
//!
//! An adapter's test provides a [`TransportHarness`]: a way to start a fresh local receiver (an
//! SMTP server, an HTTP gateway) that accepts, fails temporarily or rejects, and a transport
//! wired to it. The cases then check what the dispatcher relies on: a delivery arrives with its
//! recipient and text, and every failure is classified as temporary or permanent correctly.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_kernel::id::MessageId;
use idconsent_kernel::{IdGenerator, OsRandom, SystemClock, Timestamp, UlidGenerator};

use crate::message::{Address, DeliveryStatus, Message};
use crate::ports::{MessageTransport, TransportError};

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiverMode {
    Accept,
    /// A failure worth retrying (HTTP 503, SMTP 451).
    FailTemporarily,
    /// A refusal that will not change (HTTP 400, SMTP 550).
    Reject,
}

/// What a receiver got: the recipient and the raw text it was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub to: String,
    pub raw: String,
}

#[async_trait]
pub trait TransportHarness: Send + Sync {
    /// An address of the transport's channel.
    fn address(&self) -> Address;

    /// A fresh receiver in `mode`, the transport pointed at it, and a way to read what it got.
    async fn start(
        &self,
        mode: ReceiverMode,
    ) -> (
        Arc<dyn MessageTransport>,
        Box<dyn Fn() -> Vec<Received> + Send + Sync>,
    );

    /// A transport pointed at an address where nothing listens.
    async fn unreachable(&self) -> Arc<dyn MessageTransport>;
}

/// Runs every case as its own test; `$harness` is an expression of a `TransportHarness`.
#[macro_export]
macro_rules! message_transport_contract {
    ($harness:expr) => {
        $crate::message_transport_contract!(@cases $harness;
            a_delivery_reaches_the_receiver,
            a_temporary_refusal_is_temporary,
            a_rejection_is_permanent,
            an_unreachable_receiver_is_temporary,
            an_address_of_another_channel_is_permanent,
        );
    };
    (@cases $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::transport_contract::$case(&$harness).await;
            }
        )*
    };
}

fn message(to: Address) -> Message {
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ));
    let now = Timestamp::from_millis(1_763_719_200_000);
    Message {
        id: ids.next::<MessageId>(),
        to,
        subject: "Your idconsent code".into(),
        body: "Your idconsent code is 246810. It expires in 10 minutes.".into(),
        code: Some("246810".into()),
        link: None,
        status: DeliveryStatus::Queued,
        attempts: 0,
        last_error: None,
        next_attempt_at: now,
        created_at: now,
        delivered_at: None,
    }
}

pub async fn a_delivery_reaches_the_receiver(harness: &dyn TransportHarness) {
    let (transport, received) = harness.start(ReceiverMode::Accept).await;
    let address = harness.address();
    assert_eq!(transport.channel(), address.channel());
    transport.deliver(&message(address.clone())).await.unwrap();
    let got = received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].to, address.as_str());
    assert!(
        got[0].raw.contains("Your idconsent code is 246810"),
        "{:?}",
        got[0].raw
    );
}

pub async fn a_temporary_refusal_is_temporary(harness: &dyn TransportHarness) {
    let (transport, _) = harness.start(ReceiverMode::FailTemporarily).await;
    let outcome = transport.deliver(&message(harness.address())).await;
    assert!(
        matches!(outcome, Err(TransportError::Temporary(_))),
        "{outcome:?}"
    );
}

pub async fn a_rejection_is_permanent(harness: &dyn TransportHarness) {
    let (transport, _) = harness.start(ReceiverMode::Reject).await;
    let outcome = transport.deliver(&message(harness.address())).await;
    assert!(
        matches!(outcome, Err(TransportError::Permanent(_))),
        "{outcome:?}"
    );
}

pub async fn an_unreachable_receiver_is_temporary(harness: &dyn TransportHarness) {
    let transport = harness.unreachable().await;
    let outcome = transport.deliver(&message(harness.address())).await;
    assert!(
        matches!(outcome, Err(TransportError::Temporary(_))),
        "{outcome:?}"
    );
}

pub async fn an_address_of_another_channel_is_permanent(harness: &dyn TransportHarness) {
    let (transport, received) = harness.start(ReceiverMode::Accept).await;
    let other = match harness.address() {
        Address::Phone(_) => Address::parse("ops@example.com").unwrap(),
        Address::Email(_) => Address::parse("+15551234567").unwrap(),
    };
    let outcome = transport.deliver(&message(other)).await;
    assert!(
        matches!(outcome, Err(TransportError::Permanent(_))),
        "{outcome:?}"
    );
    assert!(received().is_empty());
}
