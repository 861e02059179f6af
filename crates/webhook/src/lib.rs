#![doc = include_str!("../README.md")]

mod dispatcher;
mod effects;
mod lanes;
mod log;
mod model;
pub mod ports;
mod recorder;
mod retries;
mod schedule;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;
#[cfg(feature = "contract")]
pub mod transport_contract;

pub use dispatcher::{Dispatcher, HandedBack, StartedAttempt, StartedRound};
pub use effects::Effects;
pub use lanes::Lanes;
pub use log::{DeliveryLog, DeliveryLogError};
pub use model::{Attempt, Delivery, DeliveryStatus, Destination, Event, EventType, Outbox};
pub use ports::{
    AttemptRecord, DeliveryStore, NextStep, PostOutcome, SigningSecrets, StoreError,
    WebhookRequest, WebhookSigner, WebhookTransport,
};
pub use retries::{ManualRetries, ManualRetry, RetryAllowance};
pub use schedule::{InvalidSchedule, RetrySchedule};
