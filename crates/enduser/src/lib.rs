#![doc = include_str!("../README.md")]

pub mod commitment;
mod error;
pub mod model;
pub mod ports;
mod service;

#[cfg(feature = "contract")]
pub mod contract;

pub use error::EndUserError;
pub use model::{
    Audience, Challenge, Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus, Purpose,
    PurposeKind, RefreshToken,
};
pub use service::{
    AuthenticationStart, Completed, EndUserPorts, EndUserService, EndUserSettings, EnrollRequest,
    TokenPair,
};
