#![doc = include_str!("../README.md")]

pub mod commitment;
mod directory;
mod model;
mod registry;
mod shown;
mod target;

pub use directory::{ApplicationDirectory, ApplicationNames, DirectoryError};
pub use idconsent_webhook::Effects;
pub use model::{
    ApprovedVia, Approver, Audience, Decision, InvalidPurposeKind, Purpose, PurposeKind, Recipient,
    Target,
};
pub use registry::{ApprovalRegistry, DuplicateKind};
pub use shown::{Document, Line, Page, PageVisitors, Shown, Words, amount};
pub use target::{AlsoFn, ApprovalTarget, TargetError};
