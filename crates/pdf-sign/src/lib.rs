#![doc = include_str!("../README.md")]

mod audit_page;
mod certificate;
mod cms;
mod font;
mod identity;
mod inspect;
mod jobs;

#[cfg(feature = "fixtures")]
pub mod fixtures;

pub use certificate::{PadesCertificateMaker, TrustedTime, certify_in_process};
pub use identity::{IdentityError, SigningIdentity};
pub use inspect::LopdfInspector;
pub use jobs::JOBS;

#[cfg(test)]
mod tests;
