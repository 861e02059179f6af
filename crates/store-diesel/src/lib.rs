#![doc = include_str!("../README.md")]

/// Runs the same diesel code on whichever backend `conn` is: the body is compiled once per
/// backend, so each gets its native types and SQL.
macro_rules! with_conn {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::AnyConnection::Sqlite($c) => $body,
            $crate::AnyConnection::Postgres($c) => $body,
        }
    };
}
pub(crate) use with_conn;

mod billing;
mod blobs;
mod cached;
mod chip_challenges;
mod consent;
mod db;
mod enduser;
mod error;
mod hosted;
mod mandate;
mod merchant;
mod migrations;
mod notification;
mod oauth;
mod oauth_keys;
mod oidc;
mod one_call;
mod qrcode;
mod repo;
mod reseal;
pub mod schema;
mod signature;
mod throttle;
mod usage;
mod verification;
mod webhook;

#[cfg(feature = "testing")]
pub mod testing;

pub use billing::DieselBillingStore;
pub use blobs::{CHUNK_BYTES, DieselBlobStore};
pub use chip_challenges::DieselChipChallengeStore;
pub use consent::DieselSessionStore;
pub use db::{AnyConnection, Backend, Db, DbOptions};
pub use enduser::DieselEndUserStore;
pub use error::{DbError, OpenError};
pub use hosted::DieselConfirmationStore;
pub use mandate::DieselMandateStore;
pub use merchant::DieselMerchantStore;
pub use migrations::migration_names;
pub use notification::DieselMessageStore;
pub use oauth::DieselOAuthStore;
pub use oauth_keys::DieselSigningKeyStore;
pub use oidc::DieselOidcClientStore;
pub use qrcode::DieselQrCodeStore;
pub use reseal::{ResealError, reseal_legacy_secrets};
pub use signature::DieselSignatureStore;
pub use throttle::DieselThrottle;
pub use verification::DieselVerificationStore;
pub use webhook::DieselDeliveryStore;
