use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_consent::{ConsentService, NewSession};
use idconsent_consent::{CreateRequest, TransactionInput};
use idconsent_kernel::Timestamp;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::requester;
use crate::http::auth::{JsonReply, Signed};
use crate::http::envelope::Envelope;
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateConsentBody {
    /// The application's client ID; must be the signing key's own.
    client_id: String,
    /// The user's phone number (E.164).
    recipient: String,
    /// `LOGIN`, `TRANSACTION`, `SIGNATURE` or `OAUTH`; enabled for the application.
    intent: String,
    /// Where the signed webhooks for this session go (https in live).
    callback_url: String,
    transaction: TransactionBody,
}

/// What the user is shown.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TransactionBody {
    #[serde(rename = "type")]
    kind: String,
    description: String,
    /// Major units, at most 2 decimals, >= 0.
    #[schema(value_type = f64)]
    amount: serde_json::Number,
    /// ISO 4217, upper case.
    currency: String,
    payee: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedSession {
    /// `cs_…`
    session_id: String,
    /// Base64 PNG of the QR code encoding `<scheme>://auth/<sessionId>`.
    qr: String,
    /// `pending`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
}

/// Creates a consent session for an enrolled user (any E.164 number in sandbox) and returns
/// its QR code. Honours `Idempotency-Key`.
#[utoipa::path(
    tag = "consents",
    security(("signedRequest" = [])),
    request_body = CreateConsentBody,
    responses(
        (status = 201, description = "Created; consent.created is on its way", body = Envelope<CreatedSession>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 403, description = "clientId of another application, or intent not enabled", body = ErrorBody),
        (status = 404, description = "Recipient is not enrolled (live)", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with another body", body = ErrorBody),
        (status = 422, description = "Invalid values", body = ErrorBody),
        (status = 429, description = "Too many sessions for this recipient; see Retry-After", body = ErrorBody)
    )
)]
#[post("/v1/consents/auth")]
pub async fn create(
    consents: web::Data<ConsentService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent("POST /v1/consents/auth", || async {
            let body: CreateConsentBody = signed.json()?;
            let NewSession { session, qr_png } = consents
                .create(
                    &requester(&signed.caller),
                    CreateRequest {
                        client_id: body.client_id,
                        recipient: body.recipient,
                        intent: body.intent,
                        callback_url: body.callback_url,
                        transaction: TransactionInput {
                            kind: body.transaction.kind,
                            description: body.transaction.description,
                            amount: body.transaction.amount.to_string(),
                            currency: body.transaction.currency,
                            payee: body.transaction.payee,
                        },
                    },
                )
                .await?;
            JsonReply::envelope(
                StatusCode::CREATED,
                "Consent session created",
                CreatedSession {
                    session_id: session.id.into_string(),
                    qr: BASE64.encode(qr_png),
                    status: "pending",
                    expires_at: session.expires_at,
                },
            )
        })
        .await
}
