//! Liveness, readiness, metrics and the API document.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::AppContext;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::ApiError;

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    status: &'static str,
    version: &'static str,
}

/// Liveness: the process answers. Touches nothing else.
#[utoipa::path(tag = "system", responses((status = 200, description = "The process is alive", body = Envelope<Health>)))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    respond(
        StatusCode::OK,
        "ok",
        Health {
            status: "ok",
            version: env!("CARGO_PKG_VERSION"),
        },
    )
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// `ready`, `degraded` (serving, but some messages cannot be delivered) or `unavailable`.
    status: &'static str,
    /// `sqlite` or `postgres`.
    database: &'static str,
    /// `ok` or why not.
    database_status: String,
    /// Transport per channel (`sms`, `email`), or `missing`: messages for that channel stay
    /// queued until one is configured.
    notifications: std::collections::BTreeMap<&'static str, &'static str>,
}

/// Readiness: the database answers within two seconds. Missing notification transports make
/// the service `degraded` (still 200) and are named.
#[utoipa::path(
    tag = "system",
    responses(
        (status = 200, description = "Ready (or degraded)", body = Envelope<Readiness>),
        (status = 503, description = "The database is unreachable", body = Envelope<Readiness>)
    )
)]
#[get("/readyz")]
pub async fn readyz(context: web::Data<AppContext>) -> HttpResponse {
    let readiness = context.system.readiness().await;
    let (code, status) = if !readiness.database_ok() {
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    } else if readiness.transports_missing() {
        (StatusCode::OK, "degraded")
    } else {
        (StatusCode::OK, "ready")
    };
    respond(
        code,
        status,
        Readiness {
            status,
            database: readiness.database,
            database_status: readiness.database_status.to_owned(),
            notifications: readiness.notifications,
        },
    )
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(tag = "system", responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
#[get("/metrics")]
pub async fn metrics(context: web::Data<AppContext>) -> Result<HttpResponse, ApiError> {
    let text = context.metrics.encode().map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text))
}

/// This API as an OpenAPI 3.1 document.
// `Object`: the document's own schema is the OpenAPI specification's (an open schema, listed in
// the contract test's OPEN_SCHEMAS).
#[utoipa::path(tag = "system", responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
#[get("/openapi.json")]
pub async fn openapi_json(context: web::Data<AppContext>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(context.docs.json.clone())
}

/// This API as a readable HTML reference.
#[utoipa::path(tag = "system", responses((status = 200, description = "HTML reference", content_type = "text/html", body = String)))]
#[get("/docs")]
pub async fn docs(context: web::Data<AppContext>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(context.docs.html.clone())
}
