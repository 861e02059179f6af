#![doc = include_str!("../README.md")]

mod approval;
mod error;
pub mod events;
pub mod model;
pub mod ports;
mod service;
pub mod testing;
mod validation;

#[cfg(feature = "contract")]
pub mod contract;

pub use approval::{MandateApprovals, MandateContext, audience_of};
pub use error::MandateError;
pub use events::{MandateBody, TermsBody};
pub use model::{
    AUTHORIZATION_WINDOW, Changes, Frequency, Mandate, MandateStatus, MandateType, Terms,
    TransitionError,
};
pub use ports::{MandateQuery, MandateRepository, RecipientDirectory, StoreError};
pub use service::{
    ChangeMandate, CreateMandate, MandatePorts, MandateService, MandateSettings, Requester,
};
pub use validation::MAX_DESCRIPTION_CHARS;
