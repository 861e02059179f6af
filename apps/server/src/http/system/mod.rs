//! Liveness, readiness, metrics and the API document.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_kernel::FieldError;
use serde::Serialize;
use utoipa::ToSchema;

use crate::health::DatabaseHealth;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{
    ApiError, DATABASE_RETRY_AFTER_SECS, ErrorBody, SERVICE_UNAVAILABLE_MESSAGE,
};
use crate::http::metrics::Metrics;
use crate::http::openapi::ApiDocs;
use crate::wiring::SystemStatus;

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
    /// `ready` or `degraded` (serving, but some messages cannot be delivered).
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
/// the service `degraded` (still 200) and are named. While the database is away: 503 with the
/// error envelope every other 503 has, `Retry-After`, and each dependency's state in `details`.
#[utoipa::path(
    tag = "system",
    responses(
        (status = 200, description = "Ready (or degraded)", body = Envelope<Readiness>),
        (status = 503, description = "The database is unreachable: `details` has `database` (`unreachable` or `timed out`) and `notifications.<channel>`", body = ErrorBody)
    )
)]
#[get("/readyz")]
pub async fn readyz(
    system: web::Data<SystemStatus>,
    health: web::Data<DatabaseHealth>,
) -> Result<HttpResponse, ApiError> {
    let readiness = system.readiness().await;
    // The ping is a read; the workers also see writes fail (a locked or full SQLite file), so
    // their verdict counts too. Only the workers mark the database back up.
    let database_status = if !readiness.database_ok() {
        health.unreachable("readyz", readiness.database_status);
        readiness.database_status
    } else {
        health.answered("readyz");
        if health.is_down() {
            "unreachable"
        } else {
            "ok"
        }
    };
    if database_status != "ok" {
        let mut details = vec![FieldError::new("database", database_status)];
        details.extend(readiness.notifications.iter().map(|(channel, transport)| {
            FieldError::new(format!("notifications.{channel}"), *transport)
        }));
        return Err(
            ApiError::unavailable(SERVICE_UNAVAILABLE_MESSAGE, DATABASE_RETRY_AFTER_SECS)
                .with_details(details),
        );
    }
    let status = if readiness.transports_missing() {
        "degraded"
    } else {
        "ready"
    };
    Ok(respond(
        StatusCode::OK,
        status,
        Readiness {
            status,
            database: readiness.database,
            database_status: readiness.database_status.to_owned(),
            notifications: readiness.notifications,
        },
    ))
}

/// Prometheus metrics (text exposition format).
#[utoipa::path(tag = "system", responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
#[get("/metrics")]
pub async fn metrics(metrics: web::Data<Metrics>) -> Result<HttpResponse, ApiError> {
    let text = metrics.encode().map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(text))
}

/// This API as an OpenAPI 3.1 document.
// `Object`: the document's own schema is the OpenAPI specification's (an open schema, listed in
// the contract test's OPEN_SCHEMAS).
#[utoipa::path(tag = "system", responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json", body = Object)))]
#[get("/openapi.json")]
pub async fn openapi_json(api_docs: web::Data<ApiDocs>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(api_docs.json.clone())
}

/// This API as a readable HTML reference.
#[utoipa::path(tag = "system", responses((status = 200, description = "HTML reference", content_type = "text/html", body = String)))]
#[get("/docs")]
pub async fn docs(api_docs: web::Data<ApiDocs>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(api_docs.html.clone())
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.system));
}
