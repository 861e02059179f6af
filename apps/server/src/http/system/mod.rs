//! Liveness, readiness, metrics and the API document.

use std::time::Duration;

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
    let database_status =
        match tokio::time::timeout(Duration::from_secs(2), context.db.ping()).await {
            Ok(Ok(())) => "ok".to_owned(),
            Ok(Err(error)) => {
                tracing::warn!(error = %error, "readiness: database check failed");
                "unreachable".to_owned()
            }
            Err(_) => "timed out".to_owned(),
        };
    let mut notifications: std::collections::BTreeMap<&'static str, &'static str> = context
        .dispatcher
        .transport_names()
        .into_iter()
        .map(|(channel, name)| (channel.as_str(), name))
        .collect();
    for channel in context.dispatcher.missing_channels() {
        notifications.insert(channel.as_str(), "missing");
    }
    let database_ok = database_status == "ok";
    let status = if !database_ok {
        "unavailable"
    } else if context.dispatcher.missing_channels().is_empty() {
        "ready"
    } else {
        "degraded"
    };
    let code = if database_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    respond(
        code,
        status,
        Readiness {
            status,
            database: context.db.backend().as_str(),
            database_status,
            notifications,
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
