use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_kernel::PageRequest;
use idconsent_mandate::MandateService;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{MandateView, requester};
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, PaginationBody, respond};
use crate::http::error::{ApiError, ErrorBody};

/// A mandate as its creator sees it.
#[utoipa::path(
    tag = "mandates",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`md_…`")),
    responses(
        (status = 200, description = "The mandate", body = Envelope<MandateView>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "No such mandate for this application and environment", body = ErrorBody)
    )
)]
#[get("/v1/service/mandates/{id}")]
pub async fn get(
    mandates: web::Data<MandateService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let mandates = &mandates;
    let mandate = mandates.get(&requester(&signed.caller), &id).await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        MandateView::of(&mandate, mandates),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct MandateListQuery {
    /// `active`, `pending` (awaiting authorisation), `cancelled` or `expired`.
    status: Option<String>,
    /// `direct_debit`, `standing_order` or `authorization`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    kind: Option<String>,
    /// From 1; default 1.
    page: Option<i64>,
    /// 1–100; default 20.
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MandateList {
    mandates: Vec<MandateView>,
    pagination: PaginationBody,
}

/// The application's mandates in the key's environment, newest first.
#[utoipa::path(
    tag = "mandates",
    security(("signedRequest" = [])),
    params(MandateListQuery),
    responses(
        (status = 200, description = "Mandates", body = Envelope<MandateList>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 422, description = "Unknown status or type, or bad paging", body = ErrorBody)
    )
)]
#[get("/v1/service/mandates")]
pub async fn list(
    mandates: web::Data<MandateService>,
    signed: Signed,
    query: web::Query<MandateListQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::new(query.page, query.limit)?;
    let mandates = &mandates;
    let page = mandates
        .list(
            &requester(&signed.caller),
            query.status.as_deref(),
            query.kind.as_deref(),
            page,
        )
        .await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        MandateList {
            mandates: page
                .items
                .iter()
                .map(|mandate| MandateView::of(mandate, mandates))
                .collect(),
            pagination: page.pagination().into(),
        },
    ))
}
