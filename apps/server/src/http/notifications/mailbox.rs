use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, web};
use idconsent_kernel::{Timestamp, ValidationErrors};
use idconsent_notification::Notifier;
use idconsent_notification::{Address, Message};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, IntoParams)]
pub struct MailboxQuery {
    /// A phone number (E.164) or an email address.
    to: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MailboxMessage {
    id: String,
    to: String,
    /// `sms` or `email`.
    channel: &'static str,
    subject: String,
    body: String,
    /// The one-time code the message carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    /// The link the message carries, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<String>,
    /// `queued`, `delivered` or `failed`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Mailbox {
    messages: Vec<MailboxMessage>,
}

impl From<Message> for MailboxMessage {
    fn from(message: Message) -> Self {
        Self {
            channel: message.channel().as_str(),
            status: message.status.as_str(),
            id: message.id.into_string(),
            to: message.to.as_str().to_owned(),
            subject: message.subject,
            body: message.body,
            code: message.code,
            link: message.link,
            created_at: message.created_at,
        }
    }
}

/// The dev mailbox: every SMS and email sent to an address, oldest first (at most 200).
/// Exists only with `IDC_MODE=dev`.
#[utoipa::path(
    tag = "notifications",
    params(MailboxQuery),
    responses(
        (status = 200, description = "Messages to that address", body = Envelope<Mailbox>),
        (status = 400, description = "`to` is missing", body = ErrorBody),
        (status = 422, description = "`to` is neither a phone number nor an email address", body = ErrorBody)
    )
)]
#[get("/v1/dev/messages")]
pub async fn dev_messages(
    notifier: web::Data<Notifier>,
    query: web::Query<MailboxQuery>,
) -> Result<HttpResponse, ApiError> {
    let address = Address::parse(&query.to)
        .map_err(|error| ApiError::validation(ValidationErrors::single("to", error.to_string())))?;
    let messages = notifier
        .sent_to(&address, 200)
        .await
        .map_err(ApiError::internal)?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        Mailbox {
            messages: messages.into_iter().map(Into::into).collect(),
        },
    ))
}
