//! The operator's billing: a merchant's plan, closing a month, marking an invoice paid.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_billing::BillingService;
use idconsent_billing::CustomLimits;
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

use crate::http::billing::views::{ClosedPeriodView, InvoiceData, PlanView};
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiJson, Operator};

/// Custom limits of an enterprise plan; absent fields keep the plan's standard values.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsBody {
    requests_per_minute: Option<u64>,
    /// `null`: unlimited.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>)]
    requests_per_day: Option<Option<u64>>,
    concurrent: Option<u64>,
}

/// A field that may be absent (outer `None`) or `null` (inner `None`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(deserializer).map(Some)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanBody {
    /// `free`, `basic`, `growth` or `enterprise`.
    plan: String,
    /// Enterprise only.
    limits: Option<LimitsBody>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClosePeriodBody {
    /// A month that has ended, `YYYY-MM`.
    period: String,
}

/// Sets a merchant's plan; limits and quotas apply at once in this process and within five
/// seconds in every other.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    params(("id" = String, Path, description = "Merchant id (`mer_…`)")),
    request_body = PlanBody,
    responses(
        (status = 200, description = "The plan now in force", body = Envelope<PlanView>),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 404, description = "No such merchant", body = ErrorBody),
        (status = 422, description = "Unknown plan, or limits out of range or not enterprise", body = ErrorBody)
    )
)]
#[post("/v1/admin/merchants/{id}/plan")]
pub async fn set_plan(
    _operator: Operator,
    billing: web::Data<BillingService>,
    id: web::Path<String>,
    ApiJson(body): ApiJson<PlanBody>,
) -> Result<HttpResponse, ApiError> {
    let limits = body.limits.map(|limits| CustomLimits {
        per_minute: limits.requests_per_minute,
        per_day: limits.requests_per_day,
        concurrent: limits.concurrent,
    });
    let terms = billing.set_plan(&id, &body.plan, limits.as_ref()).await?;
    Ok(respond(
        StatusCode::OK,
        "Plan set",
        PlanView::of(&id, &terms),
    ))
}

/// Closes a month: one pending invoice per merchant; closing it again issues nothing new.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    request_body = ClosePeriodBody,
    responses(
        (status = 200, description = "Invoices issued", body = Envelope<ClosedPeriodView>),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 422, description = "Not a month, or the month has not ended", body = ErrorBody)
    )
)]
#[post("/v1/admin/billing/close-period")]
pub async fn close_period(
    _operator: Operator,
    billing: web::Data<BillingService>,
    ApiJson(body): ApiJson<ClosePeriodBody>,
) -> Result<HttpResponse, ApiError> {
    let closed = billing.close_period(&body.period).await?;
    Ok(respond(
        StatusCode::OK,
        "Period closed",
        ClosedPeriodView::from(&closed),
    ))
}

/// Marks an invoice paid (`paidAt` now); an invoice already paid is returned unchanged.
#[utoipa::path(
    tag = "admin",
    security(("operatorToken" = [])),
    params(("id" = String, Path, description = "Invoice id (`in_…`)")),
    responses(
        (status = 200, description = "The invoice", body = Envelope<InvoiceData>),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 404, description = "No such invoice", body = ErrorBody)
    )
)]
#[post("/v1/admin/invoices/{id}/mark-paid")]
pub async fn mark_paid(
    _operator: Operator,
    billing: web::Data<BillingService>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let billing = &billing;
    let invoice = billing.mark_paid(&id).await?;
    Ok(respond(
        StatusCode::OK,
        "Invoice paid",
        InvoiceData::of(&invoice, billing.now()),
    ))
}
