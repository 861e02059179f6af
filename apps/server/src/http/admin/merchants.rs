use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use idconsent_kernel::PageRequest;
use idconsent_merchant::MerchantService;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::envelope::{Envelope, PaginationBody, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiJson, Operator};
use crate::http::merchants::views::MerchantBody;

#[derive(Debug, Deserialize, IntoParams)]
pub struct MerchantQuery {
    /// `onboarding`, `in_review`, `live` or `rejected`.
    status: Option<String>,
    page: Option<i64>,
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MerchantList {
    merchants: Vec<MerchantBody>,
    pagination: PaginationBody,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MerchantData {
    merchant: MerchantBody,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct RejectBody {
    /// Sent to the merchant.
    reason: String,
}

/// Merchants, newest first, optionally by status (`?status=in_review` is the review queue).
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    params(MerchantQuery),
    responses(
        (status = 200, description = "Merchants", body = Envelope<MerchantList>),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 422, description = "Unknown status or bad paging", body = ErrorBody)
    )
)]
#[get("/v1/admin/merchants")]
pub async fn list(
    _operator: Operator,
    merchants: web::Data<MerchantService>,
    query: web::Query<MerchantQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::new(query.page, query.limit)?;
    let merchants = merchants
        .list_merchants(query.status.as_deref(), page)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        MerchantList {
            pagination: merchants.pagination().into(),
            merchants: merchants.items.iter().map(Into::into).collect(),
        },
    ))
}

/// One merchant.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    params(("id" = String, Path, description = "Merchant id (`mer_…`)")),
    responses(
        (status = 200, description = "The merchant", body = Envelope<MerchantData>),
        (status = 404, description = "No such merchant", body = ErrorBody)
    )
)]
#[get("/v1/admin/merchants/{id}")]
pub async fn get(
    _operator: Operator,
    merchants: web::Data<MerchantService>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants.merchant(&id).await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        MerchantData {
            merchant: (&merchant).into(),
        },
    ))
}

/// Approves a merchant in review: live keys (`mk_live_…`) for every application, documents
/// marked verified; the merchant is told by email.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    params(("id" = String, Path, description = "Merchant id (`mer_…`)")),
    responses(
        (status = 200, description = "Live", body = Envelope<MerchantData>),
        (status = 404, description = "No such merchant", body = ErrorBody),
        (status = 409, description = "Not in review", body = ErrorBody),
        (status = 422, description = "Requirements no longer met", body = ErrorBody)
    )
)]
#[post("/v1/admin/merchants/{id}/approve")]
pub async fn approve(
    _operator: Operator,
    merchants: web::Data<MerchantService>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants.approve_merchant(&id).await?;
    Ok(respond(
        StatusCode::OK,
        "Merchant approved",
        MerchantData {
            merchant: (&merchant).into(),
        },
    ))
}

/// Rejects a merchant in review; the reason is emailed to the merchant, who may fix and
/// resubmit.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    params(("id" = String, Path, description = "Merchant id (`mer_…`)")),
    request_body = RejectBody,
    responses(
        (status = 200, description = "Rejected", body = Envelope<MerchantData>),
        (status = 404, description = "No such merchant", body = ErrorBody),
        (status = 409, description = "Not in review", body = ErrorBody),
        (status = 422, description = "Missing reason", body = ErrorBody)
    )
)]
#[post("/v1/admin/merchants/{id}/reject")]
pub async fn reject(
    _operator: Operator,
    merchants: web::Data<MerchantService>,
    id: web::Path<String>,
    ApiJson(body): ApiJson<RejectBody>,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants.reject_merchant(&id, &body.reason).await?;
    Ok(respond(
        StatusCode::OK,
        "Merchant rejected",
        MerchantData {
            merchant: (&merchant).into(),
        },
    ))
}
