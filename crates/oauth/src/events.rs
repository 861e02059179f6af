//! What OAuth adds to the `data` of its sessions' `consent.approved` and `consent.rejected`
//! events, after the session's own fields (CONTRACT §5, §8).

use idconsent_kernel::Timestamp;
use serde::Serialize;

use crate::model::{AccessRequest, Claims};

/// Added to both decisions: where the merchant's browser flow returns.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthRedirect<'a> {
    /// Always `OAUTH`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub redirect_uri: &'a str,
    /// `null` when the request had none.
    pub state: Option<&'a str>,
}

impl<'a> OAuthRedirect<'a> {
    pub fn of(request: &'a AccessRequest) -> Self {
        Self {
            kind: "OAUTH",
            redirect_uri: &request.redirect_uri,
            state: request.state.as_deref(),
        }
    }
}

/// Added to `consent.approved`: the authorization code (single use, until `codeExpiresAt`)
/// and what it grants.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthApproved<'a> {
    #[serde(flatten)]
    pub redirect: OAuthRedirect<'a>,
    pub code: &'a str,
    pub code_expires_at: Timestamp,
    pub claims: &'a Claims,
    pub scopes: &'a [String],
}
