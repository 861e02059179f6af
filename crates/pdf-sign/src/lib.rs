#![doc = include_str!("../README.md")]

mod audit_page;
mod certificate;
mod inspect;

pub use certificate::{LopdfCertificateMaker, append_audit_pages};
pub use inspect::LopdfInspector;
