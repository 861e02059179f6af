#![doc = include_str!("../README.md")]

mod audit_page;
mod certificate;
mod cms;
mod font;
mod identity;
mod inspect;

pub use certificate::PadesCertificateMaker;
pub use identity::{IdentityError, SigningIdentity};
pub use inspect::LopdfInspector;

#[cfg(test)]
mod tests;
