use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use idconsent_kernel::{PageRequest, Timestamp};
use idconsent_webhook::Delivery;
use idconsent_webhook::DeliveryLog;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, PaginationBody, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, IntoParams)]
pub struct DeliveryQuery {
    /// `pending`, `succeeded` or `failed`.
    status: Option<String>,
    page: Option<i64>,
    limit: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptBody {
    #[schema(value_type = String, format = DateTime)]
    at: Timestamp,
    /// The receiver's HTTP status, when it answered.
    status_code: Option<u16>,
    /// Only for timeouts and network failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    duration_ms: u64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryBody {
    /// `whd_…`
    id: String,
    /// `evt_…`, also the `webhook-id` header; unchanged on redelivery.
    event_id: String,
    event_type: String,
    url: String,
    /// `pending`, `succeeded` or `failed`.
    status: &'static str,
    /// Oldest first.
    attempts: Vec<AttemptBody>,
    #[schema(value_type = Option<String>, format = DateTime)]
    next_attempt_at: Option<Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
}

impl From<&Delivery> for DeliveryBody {
    fn from(delivery: &Delivery) -> Self {
        Self {
            id: delivery.id.to_string(),
            event_id: delivery.event_id.to_string(),
            event_type: delivery.event_type.to_string(),
            url: delivery.url.clone(),
            status: delivery.status.as_str(),
            attempts: delivery
                .attempts
                .iter()
                .map(|attempt| AttemptBody {
                    at: attempt.at,
                    status_code: attempt.status_code,
                    error: attempt.error.clone(),
                    duration_ms: attempt.duration_ms,
                })
                .collect(),
            next_attempt_at: delivery.next_attempt_at,
            created_at: delivery.created_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryList {
    deliveries: Vec<DeliveryBody>,
    pagination: PaginationBody,
}

/// The application's webhook deliveries in the key's environment, newest first: one per event
/// and destination, with every attempt.
#[utoipa::path(
    tag = "webhooks",
    security(("signedRequest" = [])),
    params(DeliveryQuery),
    responses(
        (status = 200, description = "Deliveries", body = Envelope<DeliveryList>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 422, description = "Unknown status or bad paging", body = ErrorBody)
    )
)]
#[get("/v1/webhooks/deliveries")]
pub async fn list(
    webhooks: web::Data<DeliveryLog>,
    signed: Signed,
    query: web::Query<DeliveryQuery>,
) -> Result<HttpResponse, ApiError> {
    let page = PageRequest::new(query.page, query.limit)?;
    let caller = &signed.caller;
    let page = webhooks
        .list(
            &caller.application.id,
            caller.environment,
            query.status.as_deref(),
            page,
        )
        .await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        DeliveryList {
            deliveries: page.items.iter().map(Into::into).collect(),
            pagination: page.pagination().into(),
        },
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryData {
    delivery: DeliveryBody,
}

/// Sends a delivery again now, whatever its status, with the same `webhook-id` and body.
#[utoipa::path(
    tag = "webhooks",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`whd_…`")),
    responses(
        (status = 202, description = "Queued for an immediate attempt", body = Envelope<DeliveryData>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "No such delivery for this application and environment", body = ErrorBody)
    )
)]
#[post("/v1/webhooks/deliveries/{id}/retry")]
pub async fn retry(
    webhooks: web::Data<DeliveryLog>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let caller = &signed.caller;
    let delivery = webhooks
        .retry(&caller.application.id, caller.environment, &id)
        .await?;
    Ok(respond(
        StatusCode::ACCEPTED,
        "Delivery queued",
        DeliveryData {
            delivery: (&delivery).into(),
        },
    ))
}
