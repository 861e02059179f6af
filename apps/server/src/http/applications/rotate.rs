use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_kernel::Timestamp;
use idconsent_merchant::MerchantService;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::{CredentialBody, CredentialEnvelope};
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
pub struct RotateKeyBody {
    /// `sandbox` or `live`.
    environment: String,
}

/// Issues a new API key for one environment (owner, admin, developer). The old key is refused
/// from this moment (401 `Invalid API key`); the signing secret does not change.
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    request_body = RotateKeyBody,
    responses(
        (status = 200, description = "Rotated", body = CredentialEnvelope),
        (status = 403, description = "Viewers cannot rotate", body = ErrorBody),
        (status = 404, description = "Not one of the merchant's applications", body = ErrorBody),
        (status = 409, description = "Live credentials do not exist yet", body = ErrorBody),
        (status = 422, description = "environment is not sandbox or live", body = ErrorBody)
    )
)]
#[post("/v1/merchants/applications/{id}/rotate-key")]
pub async fn rotate_key(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
    ApiJson(body): ApiJson<RotateKeyBody>,
) -> Result<HttpResponse, ApiError> {
    let rotated = merchants.rotate_key(&actor, &id, &body.environment).await?;
    Ok(HttpResponse::Ok().json(CredentialEnvelope {
        code: 200,
        error: false,
        message: "API key rotated; the previous key no longer works".into(),
        credential: CredentialBody {
            environment: rotated.environment.as_str(),
            api_key: rotated.api_key.as_str().to_owned(),
            generated_at: rotated.generated_at,
        },
    }))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSecretBody {
    /// The new `whsec_…` secret, shown this once.
    webhook_secret: String,
    /// Until then webhooks carry signatures of both the new and the previous secret.
    #[schema(value_type = String, format = DateTime)]
    previous_secret_expires_at: Timestamp,
}

/// Issues a new webhook secret (owner, admin, developer); the previous one keeps signing
/// alongside it for 24 hours.
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    responses(
        (status = 200, description = "Rotated", body = Envelope<WebhookSecretBody>),
        (status = 403, description = "Viewers cannot rotate", body = ErrorBody),
        (status = 404, description = "Not one of the merchant's applications", body = ErrorBody)
    )
)]
#[post("/v1/merchants/applications/{id}/rotate-webhook-secret")]
pub async fn rotate_webhook_secret(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let rotated = merchants.rotate_webhook_secret(&actor, &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Webhook secret rotated",
        WebhookSecretBody {
            webhook_secret: rotated.secret,
            previous_secret_expires_at: rotated.previous_expires_at,
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningSecretBody {
    /// The new `sk_…` request-signing secret, shown this once.
    secret: String,
    /// Until then requests signed with the previous secret are accepted too.
    #[schema(value_type = String, format = DateTime)]
    previous_secret_expires_at: Timestamp,
}

/// Issues a new request-signing secret (owner, admin); requests signed with the previous one
/// are accepted alongside it for 24 hours, so integrations switch without downtime.
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    responses(
        (status = 200, description = "Rotated", body = Envelope<SigningSecretBody>),
        (status = 403, description = "Only owners and admins rotate the signing secret", body = ErrorBody),
        (status = 404, description = "Not one of the merchant's applications", body = ErrorBody)
    )
)]
#[post("/v1/merchants/applications/{id}/rotate-secret")]
pub async fn rotate_secret(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let rotated = merchants.rotate_secret(&actor, &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Signing secret rotated; the previous one is accepted for 24 hours",
        SigningSecretBody {
            secret: rotated.secret,
            previous_secret_expires_at: rotated.previous_expires_at,
        },
    ))
}
