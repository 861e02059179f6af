#![doc = include_str!("../README.md")]

pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use ports::{
    CeremonyStep, Confirmation, ConfirmationStore, Issued, NewCode, StoreError, Taken,
};
pub use service::{
    Answer, AssertionStart, Client, HostedApprovals, HostedError, HostedPorts, HostedSettings,
    PageView,
};
