#![doc = include_str!("../README.md")]

mod approval;
mod error;
pub mod events;
mod model;
pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use approval::{ConsentApprovals, DecidedBy, IntentExtension, audience_of};
pub use error::ConsentError;
pub use model::{Decision, Session, SessionStatus, Transaction};
pub use ports::{CreateRefused, FloodLimits, RecipientDirectory, SessionRepository, StoreError};
pub use service::{
    ConsentPorts, ConsentService, ConsentSettings, CreateRequest, NewSession, Requester,
    TransactionInput,
};
