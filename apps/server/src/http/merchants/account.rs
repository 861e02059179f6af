use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_merchant::MerchantService;

use super::views::AccountBody;
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// The account, the signed-in member, uploaded documents and the go-live checklist.
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    responses(
        (status = 200, description = "The account", body = Envelope<AccountBody>),
        (status = 401, description = "Missing or invalid session", body = ErrorBody)
    )
)]
#[get("/v1/merchants/me")]
pub async fn me(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
) -> Result<HttpResponse, ApiError> {
    let view = merchants.account(&actor).await?;
    Ok(respond(StatusCode::OK, "ok", AccountBody::from(&view)))
}
