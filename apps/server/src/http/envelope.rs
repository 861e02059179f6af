//! The success envelope: `{ "code", "error": false, "message", "data" }`.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T> {
    /// The HTTP status.
    pub code: u16,
    /// Always `false`.
    pub error: bool,
    pub message: String,
    pub data: T,
}

/// A JSON response with the success envelope.
pub fn respond<T: Serialize>(
    status: StatusCode,
    message: impl Into<String>,
    data: T,
) -> HttpResponse {
    HttpResponse::build(status).json(Envelope {
        code: status.as_u16(),
        error: false,
        message: message.into(),
        data,
    })
}
