use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_kernel::PageRequest;
use idconsent_merchant::MerchantService;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::views::{ApplicationBody, ApplicationEnvelope, respond_application};
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, PaginationBody, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, IntoParams)]
pub struct PageQuery {
    /// From 1 (default 1).
    page: Option<i64>,
    /// 1–100 (default 20).
    limit: Option<i64>,
}

impl PageQuery {
    pub fn request(&self) -> Result<PageRequest, ApiError> {
        Ok(PageRequest::new(self.page, self.limit)?)
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationList {
    applications: Vec<ApplicationBody>,
    pagination: PaginationBody,
}

/// The merchant's applications, oldest first (secrets never shown).
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    params(PageQuery),
    responses(
        (status = 200, description = "Applications", body = Envelope<ApplicationList>),
        (status = 422, description = "Invalid page or limit", body = ErrorBody)
    )
)]
#[get("/v1/merchants/applications")]
pub async fn list(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = merchants
        .list_applications(&actor, query.request()?)
        .await?;
    let pagination = page.pagination();
    Ok(respond(
        StatusCode::OK,
        "ok",
        ApplicationList {
            applications: page
                .items
                .iter()
                .map(|view| ApplicationBody::new(view, None, None))
                .collect(),
            pagination: pagination.into(),
        },
    ))
}

/// One application (secrets never shown).
#[utoipa::path(
    tag = "applications",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    responses(
        (status = 200, description = "The application", body = ApplicationEnvelope),
        (status = 404, description = "Not one of the merchant's applications", body = ErrorBody)
    )
)]
#[get("/v1/merchants/applications/{id}")]
pub async fn get(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = merchants.application(&actor, &id).await?;
    Ok(respond_application(
        StatusCode::OK,
        "ok",
        ApplicationBody::new(&view, None, None),
    ))
}
