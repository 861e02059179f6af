#![doc = include_str!("../README.md")]

mod dispatcher;
mod effects;
mod log;
mod model;
pub mod ports;
mod schedule;

#[cfg(feature = "contract")]
pub mod contract;
#[cfg(feature = "contract")]
pub mod transport_contract;

pub use dispatcher::{DeliveryReport, Dispatcher};
pub use effects::Effects;
pub use log::{DeliveryLog, DeliveryLogError};
pub use model::{Attempt, Delivery, DeliveryStatus, Destination, Event, EventType, Outbox};
pub use ports::{
    DeliveryStore, NextStep, PostOutcome, SigningSecrets, StoreError, WebhookRequest,
    WebhookSigner, WebhookTransport,
};
pub use schedule::{InvalidSchedule, RetrySchedule};
