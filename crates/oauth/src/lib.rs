#![doc = include_str!("../README.md")]

mod approval;
mod code;
mod error;
pub mod events;
pub mod model;
pub mod pkce;
pub mod ports;
mod redirect;
pub mod sandbox;
mod service;
pub mod signing_keys;
#[cfg(feature = "testing")]
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;
#[cfg(feature = "contract")]
pub mod signing_keys_contract;

pub use approval::OAuthApprovals;
pub use error::OAuthError;
pub use model::{
    AccessRequest, Claim, ClaimKey, Claims, GRANT_CODE_SEALED_KIND, Grant, GrantWithSession,
    IssuedToken, SessionState, VerificationStatus, VerifiedValue, claims_object,
    grant_code_sealed_for,
};
pub use pkce::ChallengeMethod;
pub use service::{
    ActiveToken, ApprovedRequest, CreateAccessRequest, ExchangeOptions, HostedPage,
    NewAccessRequest, OAuthPorts, OAuthService, OAuthSettings, PAIRWISE_SUBJECT_PURPOSE,
    RequestStatus, TokenGrant, UserInfo, pairwise_subject,
};
pub use signing_keys::{
    KeyGenerator, Rotated, SIGNING_KEY_SEALED_KIND, SigningKey, SigningKeyError, SigningKeyRecord,
    SigningKeySettings, SigningKeyStore, SigningKeys, sealed_signing_key,
};
