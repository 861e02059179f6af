//! The OAuth signing keys, for the operator: list and rotate. Every server process shares them
//! through the database; a new key is published by every process within the reload interval and
//! signs after the activation delay.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use idconsent_kernel::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::Operator;
use crate::wiring::OAuthKeys;

/// One signing key (never its private part).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningKeyBody {
    /// The JWK `kid` (RFC 7638 thumbprint).
    kid: String,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    /// When it starts (or started) signing.
    #[schema(value_type = String, format = DateTime)]
    activates_at: Timestamp,
    /// When it stopped signing; it verifies until its last token expires.
    #[schema(value_type = Option<String>, format = DateTime)]
    retired_at: Option<Timestamp>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SigningKeyList {
    keys: Vec<SigningKeyBody>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedKey {
    kid: String,
    #[schema(value_type = String, format = DateTime)]
    activates_at: Timestamp,
}

fn unavailable(error: idconsent_oauth::SigningKeyError) -> ApiError {
    ApiError::failure(&error)
}

/// The published signing keys, oldest first.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    responses(
        (status = 200, description = "The keys", body = Envelope<SigningKeyList>),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody)
    )
)]
#[get("/v1/admin/oauth-keys")]
pub async fn list(
    _operator: Operator,
    oauth_keys: web::Data<OAuthKeys>,
) -> Result<HttpResponse, ApiError> {
    let keys = oauth_keys.list().await.map_err(unavailable)?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        SigningKeyList {
            keys: keys
                .into_iter()
                .map(|key| SigningKeyBody {
                    kid: key.kid,
                    created_at: key.created_at,
                    activates_at: key.activates_at,
                    retired_at: key.retired_at,
                })
                .collect(),
        },
    ))
}

/// Adds a signing key: published at once, signing after `IDC_OAUTH_KEY_ACTIVATION_SECONDS`;
/// the current key signs until then and verifies until its last token expires.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    responses(
        (status = 201, description = "The new key", body = Envelope<RotatedKey>),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody)
    )
)]
#[post("/v1/admin/oauth-keys/rotate")]
pub async fn rotate(
    _operator: Operator,
    oauth_keys: web::Data<OAuthKeys>,
) -> Result<HttpResponse, ApiError> {
    let rotated = oauth_keys.rotate().await.map_err(unavailable)?;
    Ok(respond(
        StatusCode::CREATED,
        "Signing key added",
        RotatedKey {
            kid: rotated.kid,
            activates_at: rotated.activates_at,
        },
    ))
}
