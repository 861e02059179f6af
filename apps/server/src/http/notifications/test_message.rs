use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_kernel::ValidationErrors;
use idconsent_notification::Notifier;
use idconsent_notification::{Address, NewMessage, NotificationSender};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiJson, Operator};

#[derive(Debug, Deserialize, ToSchema)]
pub struct TestMessageRequest {
    /// A phone number (E.164, sent by SMS) or an email address.
    to: String,
    /// Optional text; at most 300 characters.
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedMessage {
    message_id: String,
    /// `sms` or `email`.
    channel: &'static str,
    /// Always `queued`: delivery happens in the background.
    status: &'static str,
}

/// Queues a test SMS or email through the configured transport, so an operator can check the
/// SMTP or SMS gateway settings. Watch `/readyz` and the logs for the outcome.
#[utoipa::path(
    tag = "notifications",
    security(("operatorToken" = [])),
    request_body = TestMessageRequest,
    responses(
        (status = 202, description = "Queued", body = Envelope<QueuedMessage>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "Missing or wrong operator token", body = ErrorBody),
        (status = 422, description = "Invalid address or text", body = ErrorBody)
    )
)]
#[post("/v1/admin/notifications/test")]
pub async fn send_test_message(
    _operator: Operator,
    notifier: web::Data<Notifier>,
    ApiJson(request): ApiJson<TestMessageRequest>,
) -> Result<HttpResponse, ApiError> {
    let mut errors = ValidationErrors::new();
    let to = errors.check("to", Address::parse(&request.to));
    let text = request
        .text
        .unwrap_or_else(|| "This is a test message from idconsent.".to_owned());
    if text.trim().is_empty() || text.chars().count() > 300 {
        errors.push("text", "must be 1 to 300 characters");
    }
    let to = errors.finish_with(|| to)?;
    let channel = to.channel().as_str();
    let message_id = notifier
        .send(NewMessage {
            to,
            subject: "idconsent test message".to_owned(),
            body: text,
            code: None,
            link: None,
        })
        .await
        .map_err(ApiError::internal)?;
    Ok(respond(
        StatusCode::ACCEPTED,
        "Test message queued",
        QueuedMessage {
            message_id: message_id.into_string(),
            channel,
            status: "queued",
        },
    ))
}
