use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_merchant::MerchantService;
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Serialize, ToSchema)]
pub struct Review {
    /// `in_review`.
    status: &'static str,
}

/// Submits the account for go-live review (owner, admin). Every unmet requirement comes back
/// as one `details` entry of a 422.
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    responses(
        (status = 202, description = "Submitted for review", body = Envelope<Review>),
        (status = 403, description = "Not an owner or admin", body = ErrorBody),
        (status = 409, description = "Already in review or live", body = ErrorBody),
        (status = 422, description = "Requirements unmet; one detail per requirement", body = ErrorBody)
    )
)]
#[post("/v1/merchants/go-live")]
pub async fn go_live(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants.submit_for_review(&actor).await?;
    Ok(respond(
        StatusCode::ACCEPTED,
        "Submitted for review",
        Review {
            status: merchant.status.as_str(),
        },
    ))
}
