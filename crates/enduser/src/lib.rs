#![doc = include_str!("../README.md")]

/// The commitment scheme moved to `idconsent-approval`; re-exported for existing users.
pub use idconsent_approval::commitment;
mod approval;
pub mod context;
mod devices;
mod error;
pub mod events;
pub mod model;
pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use approval::DeviceAddApprovals;
pub use error::EndUserError;
pub use model::{
    Audience, Challenge, Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus, Purpose,
    PurposeKind, RefreshToken,
};
pub use service::{
    AuthenticationStart, Completed, EndUserPorts, EndUserService, EndUserSettings, EnrollRequest,
    TokenPair,
};
