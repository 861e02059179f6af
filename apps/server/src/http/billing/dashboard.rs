//! `GET /v1/merchants/billing/{usage,invoices}` for the dashboard (owners and admins).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_billing::BillingService;
use idconsent_kernel::PageRequest;

use super::views::{InvoiceList, InvoiceQuery, UsageView};
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// This month's usage (as `GET /v1/service/billings/usage`).
#[utoipa::path(
    tag = "billing",
    security(("merchantJwt" = [])),
    responses(
        (status = 200, description = "Usage summary", body = Envelope<UsageView>),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Only owners and admins see billing", body = ErrorBody)
    )
)]
#[get("/v1/merchants/billing/usage")]
pub async fn usage(
    billing: web::Data<BillingService>,
    MerchantSession(actor): MerchantSession,
) -> Result<HttpResponse, ApiError> {
    let merchant = actor.billing_account()?;
    let summary = billing.usage(merchant).await?;
    Ok(respond(StatusCode::OK, "ok", UsageView::from(&summary)))
}

/// The account's invoices (as `GET /v1/service/billings`).
#[utoipa::path(
    tag = "billing",
    security(("merchantJwt" = [])),
    params(InvoiceQuery),
    responses(
        (status = 200, description = "Invoices", body = Envelope<InvoiceList>),
        (status = 401, description = "Not signed in", body = ErrorBody),
        (status = 403, description = "Only owners and admins see billing", body = ErrorBody),
        (status = 422, description = "Bad period, status or paging", body = ErrorBody)
    )
)]
#[get("/v1/merchants/billing/invoices")]
pub async fn invoices(
    billing: web::Data<BillingService>,
    MerchantSession(actor): MerchantSession,
    query: web::Query<InvoiceQuery>,
) -> Result<HttpResponse, ApiError> {
    let merchant = actor.billing_account()?;
    let page = PageRequest::new(query.page, query.limit)?;
    let billing = &billing;
    let invoices = billing
        .invoices(
            merchant,
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
