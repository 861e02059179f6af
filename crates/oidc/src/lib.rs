#![doc = include_str!("../README.md")]

pub mod discovery;
pub mod model;
pub mod ports;
mod provider;
mod secret;
mod service;
pub mod testing;

#[cfg(feature = "contract")]
pub mod contract;

pub use model::{AuthMethod, ClientConfig, ClientInput, DeliveryMode, Profile};
pub use ports::{
    Authorization, AuthorizationStore, ClientApplication, ClientApplications, ClientStore,
    IdTokenSigner, RefreshStore, RefreshToken, RefreshUse, StoreError,
};
pub use provider::{
    ACR, AMR, AuthorizeOutcome, AuthorizeParams, AuthorizeRefusal, BackchannelStarted, CIBA_GRANT,
    OidcProvider, ProtocolError, ProviderPorts, ProviderSettings, SCOPE_CLAIMS, TokenRequest,
    TokenResponse, UserInfoResponse, standard_claims,
};
pub use secret::{CLIENT_SECRET_PURPOSE, client_secret_hash};
pub use service::{
    AuthenticatedClient, ClientAuthError, ClientManager, Configured, OidcClientError, OidcClients,
    PresentedCredentials,
};
