//! `GET /v1/service/billings[/usage]` for signed requests: the caller's merchant.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_billing::BillingService;
use idconsent_kernel::PageRequest;

use super::views::{InvoiceList, InvoiceQuery, UsageView};
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// The merchant's invoices, newest month first (spec §4.12).
#[utoipa::path(
    tag = "billing",
    security(("signedRequest" = [])),
    params(InvoiceQuery),
    responses(
        (status = 200, description = "Invoices", body = Envelope<InvoiceList>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 422, description = "Bad period, status or paging", body = ErrorBody),
        (status = 429, description = "Over the plan's rate limit", body = ErrorBody)
    )
)]
#[get("/v1/service/billings")]
pub async fn invoices(
    billing: web::Data<BillingService>,
    signed: Signed,
    query: web::Query<InvoiceQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::new(query.page, query.limit)?;
    let billing = &billing;
    let invoices = billing
        .invoices(
            &signed.caller.application.merchant_id,
            query.period.as_deref(),
            query.status.as_deref(),
            page,
        )
        .await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        InvoiceList::of(&invoices, billing.now()),
    ))
}

/// This month's usage against the plan's quotas (spec §2.8).
#[utoipa::path(
    tag = "billing",
    security(("signedRequest" = [])),
    responses(
        (status = 200, description = "Usage summary", body = Envelope<UsageView>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 429, description = "Over the plan's rate limit", body = ErrorBody)
    )
)]
#[get("/v1/service/billings/usage")]
pub async fn usage(
    billing: web::Data<BillingService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let summary = billing
        .usage(&signed.caller.application.merchant_id)
        .await?;
    Ok(respond(StatusCode::OK, "ok", UsageView::from(&summary)))
}
