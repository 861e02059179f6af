use actix_web::http::StatusCode;
use actix_web::{HttpResponse, patch, web};
use idconsent_merchant::BusinessPatch;
use idconsent_merchant::MerchantService;
use serde::Deserialize;
use utoipa::ToSchema;

use super::views::MerchantBody;
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

/// Business profile fields (spec §2.4); absent fields keep their value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BusinessPatchBody {
    registered_name: Option<String>,
    registration_number: Option<String>,
    /// `YYYY-MM-DD`.
    date_registered: Option<String>,
    address: Option<String>,
    usecase: Option<String>,
    description: Option<String>,
    /// `passport`, `national_id` or `drivers_license`.
    identity_type: Option<String>,
    identity_number: Option<String>,
}

/// Saves the business profile (owner, admin) and re-runs the corporate registry check when the
/// registered name, number or date changed.
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    request_body = BusinessPatchBody,
    responses(
        (status = 200, description = "Saved; see business.registryVerification", body = Envelope<MerchantBody>),
        (status = 403, description = "Not an owner or admin", body = ErrorBody),
        (status = 409, description = "The account is in review", body = ErrorBody),
        (status = 422, description = "Invalid values", body = ErrorBody)
    )
)]
#[patch("/v1/merchants/business")]
pub async fn update_business(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    ApiJson(body): ApiJson<BusinessPatchBody>,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants
        .update_business(
            &actor,
            BusinessPatch {
                registered_name: body.registered_name,
                registration_number: body.registration_number,
                date_registered: body.date_registered,
                address: body.address,
                usecase: body.usecase,
                description: body.description,
                identity_type: body.identity_type,
                identity_number: body.identity_number,
            },
        )
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Business profile saved",
        MerchantBody::from(&merchant),
    ))
}
