//! OAuth requests seen from the consent approval: what the app shows besides the session, and
//! the authorization code issued when the user approves.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_consent::{ConsentError, DecidedBy, Decision, IntentExtension, Session};
use idconsent_kernel::Intent;
use idconsent_webhook::Effects;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::OAuthError;
use crate::service::OAuthService;

/// What an OAuth request adds to the consent context the app shows: the claim names and scopes
/// that would be shared, and the merchant's description (`null` without one).
#[derive(Debug, Serialize)]
struct OAuthShown<'a> {
    claims: Vec<&'static str>,
    scopes: &'a [String],
    description: Option<&'a str>,
}

/// The consent domain's [`IntentExtension`] for `OAUTH` sessions.
#[derive(Debug, Clone)]
pub struct OAuthApprovals(pub Arc<OAuthService>);

fn consent_error(error: OAuthError) -> ConsentError {
    match error {
        OAuthError::Consent(inner) => inner,
        OAuthError::NotFound(message) => ConsentError::NotFound(message),
        other => ConsentError::Unavailable(Box::new(other)),
    }
}

#[async_trait]
impl IntentExtension for OAuthApprovals {
    fn intent(&self) -> Intent {
        Intent::Oauth
    }

    /// The claims and scopes that would be shared, and the merchant's description: part of
    /// what the user's passkey commits to (see `idconsent_consent`'s consent context).
    async fn describe(&self, session: &Session) -> Result<Map<String, Value>, ConsentError> {
        let Some(request) = self.0.request_of(session).await.map_err(consent_error)? else {
            return Ok(Map::new());
        };
        let shown = OAuthShown {
            claims: request.claims.iter().map(|c| c.as_str()).collect(),
            scopes: &request.scopes,
            description: request.description.as_deref(),
        };
        match serde_json::to_value(shown) {
            Ok(Value::Object(fields)) => Ok(fields),
            Ok(_) => Ok(Map::new()),
            Err(error) => Err(ConsentError::Unavailable(Box::new(error))),
        }
    }

    async fn decide(
        &self,
        session: Session,
        decision: Decision,
        by: DecidedBy,
        also: Effects,
    ) -> Result<Session, ConsentError> {
        self.0
            .decide(session, decision, by, also)
            .await
            .map_err(consent_error)
    }
}
