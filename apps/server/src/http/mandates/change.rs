use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, put, web};
use idconsent_kernel::ValidationErrors;
use idconsent_mandate::ChangeMandate;
use idconsent_mandate::MandateService;
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

use super::{MandateView, requester};
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// A present field, `null` included: `Some(None)` for `null`, `None` (by `default`) when absent.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangeMandateBody {
    /// Shown to the recipient: 1–500 characters. Changes without re-authorisation.
    description: Option<String>,
    /// The new maximum amount, `null` to remove it. On an active mandate: re-authorisation.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>)]
    amount: Option<Option<serde_json::Number>>,
    /// ISO 4217. On an active mandate: re-authorisation.
    currency: Option<String>,
    /// `daily`, `weekly`, `monthly` or `yearly`, `null` to remove it. On an active mandate:
    /// re-authorisation.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    frequency: Option<Option<String>>,
    /// Cannot change (422): create a new mandate instead.
    #[schema(value_type = Option<String>)]
    recipient: Option<serde_json::Value>,
    /// Cannot change (422): create a new mandate instead.
    #[serde(rename = "type")]
    #[schema(value_type = Option<String>)]
    kind: Option<serde_json::Value>,
}

/// Changes a mandate. The description may change while it is open; a new amount, currency or
/// frequency on an `active` mandate sends it back to `pending_authorization` — the recipient
/// re-authorises in the app, shown the old and the new terms.
#[utoipa::path(
    tag = "mandates",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`md_…`")),
    request_body = ChangeMandateBody,
    responses(
        (status = 200, description = "The mandate as changed", body = Envelope<MandateView>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "No such mandate for this application and environment", body = ErrorBody),
        (status = 409, description = "The mandate is cancelled or expired", body = ErrorBody),
        (status = 422, description = "Invalid values, or a field that cannot change", body = ErrorBody)
    )
)]
#[put("/v1/service/mandates/{id}")]
pub async fn change(
    mandates: web::Data<MandateService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let body: ChangeMandateBody = signed.json()?;
    let mut fixed = ValidationErrors::new();
    if body.recipient.is_some() {
        fixed.push("recipient", "cannot be changed; create a new mandate");
    }
    if body.kind.is_some() {
        fixed.push("type", "cannot be changed; create a new mandate");
    }
    fixed.finish()?;
    let mandates = &mandates;
    let mandate = mandates
        .change(
            &requester(&signed.caller),
            &id,
            ChangeMandate {
                description: body.description,
                amount: body
                    .amount
                    .map(|amount| amount.map(|amount| amount.to_string())),
                currency: body.currency,
                frequency: body.frequency,
            },
        )
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Mandate updated",
        MandateView::of(&mandate, mandates),
    ))
}

/// Cancels a mandate: it is kept, reads `cancelled`, and cancelling again changes nothing.
#[utoipa::path(
    tag = "mandates",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`md_…`")),
    responses(
        (status = 200, description = "Cancelled", body = Envelope<MandateView>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "No such mandate for this application and environment", body = ErrorBody),
        (status = 409, description = "The mandate expired before it was authorised", body = ErrorBody)
    )
)]
#[delete("/v1/service/mandates/{id}")]
pub async fn cancel(
    mandates: web::Data<MandateService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let mandates = &mandates;
    let mandate = mandates.cancel(&requester(&signed.caller), &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Mandate cancelled",
        MandateView::of(&mandate, mandates),
    ))
}
