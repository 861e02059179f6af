use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_mandate::CreateMandate;
use idconsent_mandate::MandateService;
use serde::Deserialize;
use utoipa::ToSchema;

use super::{MandateView, requester};
use crate::http::auth::{JsonReply, Signed};
use crate::http::envelope::Envelope;
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateMandateBody {
    /// An E.164 phone (enrolled, with live keys) or an email address.
    recipient: String,
    /// `direct_debit`, `standing_order` or `authorization`.
    #[serde(rename = "type")]
    kind: String,
    /// The maximum authorised amount in major units: positive, at most the currency's minor
    /// digits.
    #[schema(value_type = Option<f64>)]
    amount: Option<serde_json::Number>,
    /// ISO 4217; default `USD`.
    currency: Option<String>,
    /// `daily`, `weekly`, `monthly` or `yearly`.
    frequency: Option<String>,
    /// Shown to the recipient: 1–500 characters.
    description: String,
    /// Where `mandate.signed` goes; default: the application's callback URL.
    callback_url: Option<String>,
}

/// Asks a recipient to authorise a mandate: in the app (a phone) or on a hosted page (an
/// email). Honours `Idempotency-Key`.
#[utoipa::path(
    tag = "mandates",
    security(("signedRequest" = [])),
    request_body = CreateMandateBody,
    responses(
        (status = 200, description = "Created, awaiting authorisation", body = Envelope<MandateView>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "Recipient is not enrolled (live)", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with another body", body = ErrorBody),
        (status = 422, description = "Invalid values", body = ErrorBody),
        (status = 429, description = "The monthly mandate quota is used up", body = ErrorBody)
    )
)]
#[post("/v1/service/mandates")]
pub async fn create(
    mandates: web::Data<MandateService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent("POST /v1/service/mandates", || async {
            let body: CreateMandateBody = signed.json()?;
            let mandates = &mandates;
            let mandate = mandates
                .create(
                    &requester(&signed.caller),
                    CreateMandate {
                        recipient: body.recipient,
                        kind: body.kind,
                        amount: body.amount.map(|amount| amount.to_string()),
                        currency: body.currency,
                        frequency: body.frequency,
                        description: body.description,
                        callback_url: body.callback_url,
                    },
                )
                .await?;
            // 200, as the spec shows (§4.8).
            JsonReply::envelope(
                StatusCode::OK,
                "Mandate created",
                MandateView::of(&mandate, mandates),
            )
        })
        .await
}
