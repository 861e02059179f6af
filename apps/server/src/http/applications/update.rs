use actix_web::http::StatusCode;
use actix_web::{HttpResponse, patch, web};
use idconsent_merchant::MerchantService;

use super::create::ApplicationRequest;
use super::views::{ApplicationBody, ApplicationEnvelope, respond_application};
use crate::http::auth::MerchantSession;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

/// Changes name, callback URL, redirect URIs or request types; absent fields stay.
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    request_body = ApplicationRequest,
    responses(
        (status = 200, description = "Updated", body = ApplicationEnvelope),
        (status = 403, description = "Viewers cannot change applications", body = ErrorBody),
        (status = 404, description = "Not one of the merchant's applications", body = ErrorBody),
        (status = 422, description = "Invalid values", body = ErrorBody)
    )
)]
#[patch("/v1/merchants/applications/{id}")]
pub async fn update(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
    ApiJson(body): ApiJson<ApplicationRequest>,
) -> Result<HttpResponse, ApiError> {
    let view = merchants
        .update_application(&actor, &id, body.into())
        .await?;
    Ok(respond_application(
        StatusCode::OK,
        "Application updated",
        ApplicationBody::new(&view, None, None),
    ))
}
