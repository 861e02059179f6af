//! The client secret: `ocs_` + 64 lowercase hex characters (32 random bytes), shown once and
//! stored as a keyed hash bound to its application, so a hash copied into another
//! application's row verifies nothing there.

use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{KeyedHash, RandomSource};
use subtle::ConstantTimeEq;

/// The keyed-hash purpose of client secrets.
pub const CLIENT_SECRET_PURPOSE: &str = "oidc.client-secret";

const PREFIX: &str = "ocs_";

pub(crate) fn generate(random: &dyn RandomSource) -> String {
    let bytes: [u8; 32] = random.bytes();
    let mut secret = String::with_capacity(PREFIX.len() + 64);
    secret.push_str(PREFIX);
    for byte in bytes {
        secret.push_str(&format!("{byte:02x}"));
    }
    secret
}

/// The stored form of `secret` for `application`.
pub fn client_secret_hash(
    hasher: &dyn KeyedHash,
    application: &ApplicationId,
    secret: &str,
) -> String {
    let mut bound = Vec::with_capacity(application.as_str().len() + 1 + secret.len());
    bound.extend_from_slice(application.as_str().as_bytes());
    bound.push(0);
    bound.extend_from_slice(secret.as_bytes());
    hasher.hex(CLIENT_SECRET_PURPOSE, &bound)
}

/// Whether `presented` is the secret whose hash is `stored` (constant time in the hash).
pub(crate) fn matches(
    hasher: &dyn KeyedHash,
    application: &ApplicationId,
    presented: &str,
    stored: &str,
) -> bool {
    // Bounded before hashing: a secret is 68 characters, anything much longer is not one.
    if presented.len() > 256 {
        return false;
    }
    let computed = client_secret_hash(hasher, application, presented);
    computed.as_bytes().ct_eq(stored.as_bytes()).into()
}
