use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_merchant::ApplicationInput;
use idconsent_merchant::MerchantService;
use serde::Deserialize;
use utoipa::ToSchema;

use super::views::{ApplicationBody, ApplicationEnvelope, respond_application};
use crate::http::auth::MerchantSession;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

/// A new application: `name` and `callbackUrl` are required (missing or `null` → 400).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewApplicationRequest {
    pub name: String,
    /// Default signed-webhook destination.
    pub callback_url: String,
    /// Browser return URLs: https, or http on localhost.
    pub redirect_uris: Option<Vec<String>>,
    /// Any of `LOGIN`, `TRANSACTION`, `SIGNATURE`, `OAUTH`; all four by default.
    pub request_types: Option<Vec<String>>,
}

impl From<NewApplicationRequest> for ApplicationInput {
    fn from(request: NewApplicationRequest) -> Self {
        Self {
            name: Some(request.name),
            callback_url: Some(request.callback_url),
            redirect_uris: request.redirect_uris,
            request_types: request.request_types,
        }
    }
}

/// Changes to an application: only the fields sent change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationRequest {
    pub name: Option<String>,
    /// Default signed-webhook destination.
    pub callback_url: Option<String>,
    /// Browser return URLs: https, or http on localhost.
    pub redirect_uris: Option<Vec<String>>,
    /// Any of `LOGIN`, `TRANSACTION`, `SIGNATURE`, `OAUTH`; all four by default.
    pub request_types: Option<Vec<String>>,
}

impl From<ApplicationRequest> for ApplicationInput {
    fn from(request: ApplicationRequest) -> Self {
        Self {
            name: request.name,
            callback_url: request.callback_url,
            redirect_uris: request.redirect_uris,
            request_types: request.request_types,
        }
    }
}

/// Creates an application with sandbox credentials (and live ones when the account is live).
/// The signing secret and the webhook secret are shown this once.
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    request_body = NewApplicationRequest,
    responses(
        (status = 201, description = "Created", body = ApplicationEnvelope),
        (status = 400, description = "Malformed body or a missing field", body = ErrorBody),
        (status = 403, description = "Viewers cannot create applications", body = ErrorBody),
        (status = 422, description = "Invalid values", body = ErrorBody)
    )
)]
#[post("/v1/merchants/applications")]
pub async fn create(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    ApiJson(body): ApiJson<NewApplicationRequest>,
) -> Result<HttpResponse, ApiError> {
    let created = merchants.create_application(&actor, body.into()).await?;
    Ok(respond_application(
        StatusCode::CREATED,
        "Application created; store the secret and webhook secret now, they are not shown again",
        ApplicationBody::new(
            &created.view,
            Some(created.secret),
            Some(created.webhook_secret),
        ),
    ))
}
