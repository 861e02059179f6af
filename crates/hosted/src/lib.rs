#![doc = include_str!("../README.md")]

mod ceremony;
pub mod guesses;
mod pages;
pub mod ports;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use guesses::{GuessPolicy, GuessState, Taken};
pub use ports::{CeremonyStep, Confirmation, ConfirmationStore, Issued, NewCode, StoreError};
pub use service::{
    Answer, AssertionStart, Client, HostedApprovals, HostedError, HostedPorts, HostedSettings,
};
