#![doc = include_str!("../README.md")]

mod code;
mod error;
pub mod model;
pub mod pkce;
pub mod ports;
mod service;

#[cfg(feature = "contract")]
pub mod contract;

pub use error::OAuthError;
pub use model::{
    AccessRequest, ClaimKey, Grant, GrantWithSession, IssuedToken, SessionState, VerifiedValue,
    claims_object,
};
pub use pkce::ChallengeMethod;
pub use service::{
    CreateAccessRequest, OAuthPorts, OAuthService, OAuthSettings, RequestStatus, TokenGrant,
};
