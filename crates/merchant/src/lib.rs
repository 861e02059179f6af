#![doc = include_str!("../README.md")]

mod applications;
pub mod credentials;
mod directory;
mod error;
pub mod golive;
pub mod login;
pub mod model;
mod onboarding;
mod operator;
pub mod ports;
mod service;
mod team;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;
#[cfg(feature = "contract")]
pub mod registry_contract;

pub use applications::{
    API_KEY_HASH_PURPOSE, ApplicationInput, ApplicationView, CreatedApplication, RotatedKey,
    RotatedSecret, RotatedWebhookSecret,
};
pub use credentials::ApiKey;
pub use directory::{ApplicationSigningSecrets, MerchantDirectory};
pub use error::MerchantError;
pub use onboarding::{
    AccountView, BusinessPatch, DocumentUpload, MAX_DOCUMENT_BYTES, RegisterRequest, Registered,
};
pub use service::{Actor, MerchantPorts, MerchantService, MerchantSettings, SessionToken};
