//! `ApiError`: every failure as the JSON error envelope of CONTRACT §1.

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use idconsent_kernel::{ErrorCategory, FieldError, ValidationErrors};
use serde::Serialize;
use utoipa::ToSchema;

/// The error envelope.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "code": 422, "error": true, "type": "validation_error", "message": "recipient: must be an E.164 phone number such as +15551234567",
    "details": [{"field": "recipient", "message": "must be an E.164 phone number such as +15551234567"}]
}))]
pub struct ErrorBody {
    /// The HTTP status.
    pub code: u16,
    /// Always `true`.
    pub error: bool,
    /// `bad_request`, `unauthorized`, `forbidden`, `not_found`, `conflict`, `gone`,
    /// `method_not_allowed`, `payload_too_large`, `unsupported_media_type`,
    /// `validation_error`, `rate_limited`, `server_error` or `service_unavailable`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<FieldErrorBody>,
}

/// One invalid field.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldErrorBody {
    /// JSON path of the field, e.g. `transaction.amount`.
    pub field: String,
    pub message: String,
}

impl From<FieldError> for FieldErrorBody {
    fn from(error: FieldError) -> Self {
        Self {
            field: error.field,
            message: error.message,
        }
    }
}

/// An HTTP failure. Build it from a domain error category or with the named constructors;
/// `internal` logs its cause once and shows the client nothing of it.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    details: Vec<FieldErrorBody>,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Why a 503 was answered, for the metrics middleware (`http_unavailable{cause}`).
    unavailable_cause: Option<&'static str>,
}

/// The response extension that tells the metrics middleware why a 503 was answered.
#[derive(Debug, Clone, Copy)]
pub struct UnavailableCause(pub &'static str);

/// What every 503 for an unreachable database says (issue 19).
pub const SERVICE_UNAVAILABLE_MESSAGE: &str = "The service is temporarily unavailable; retry later";

/// The `Retry-After` of a 503 for an unreachable database, in seconds.
pub const DATABASE_RETRY_AFTER_SECS: u64 = 5;

impl ApiError {
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        Self::with_status(
            StatusCode::from_u16(category.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            category.type_name(),
            message,
        )
    }

    fn with_status(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            details: Vec::new(),
            headers: Vec::new(),
            unavailable_cause: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::BadRequest, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Unauthorized, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Forbidden, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::NotFound, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorCategory::Conflict, message)
    }

    /// 422 with one `details` entry per invalid field.
    pub fn validation(errors: ValidationErrors) -> Self {
        let mut error = Self::new(ErrorCategory::Validation, errors.to_string());
        error.details = errors.into_fields().into_iter().map(Into::into).collect();
        error
    }

    pub fn rate_limited(message: impl Into<String>, retry_after_secs: u64) -> Self {
        Self::new(ErrorCategory::RateLimited, message)
            .header(header::RETRY_AFTER, retry_after_secs.max(1).to_string())
    }

    /// 429 for a monthly quota: `details` names it (`quota_exceeded`), `Retry-After` says
    /// when the next period starts.
    pub fn quota_exceeded(quota: idconsent_kernel::QuotaExceeded, retry_after_secs: u64) -> Self {
        Self::rate_limited(quota.to_string(), retry_after_secs).with_details(vec![FieldError::new(
            "quota_exceeded",
            quota.metric.as_str(),
        )])
    }

    /// 503: the service cannot answer now; `Retry-After` says when to try again.
    pub fn unavailable(message: impl Into<String>, retry_after_secs: u64) -> Self {
        Self::with_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            message,
        )
        .header(header::RETRY_AFTER, retry_after_secs.max(1).to_string())
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::with_status(StatusCode::GONE, "gone", message)
    }

    pub fn method_not_allowed(allowed: &[&str]) -> Self {
        Self::with_status(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "Method not allowed",
        )
        .header(header::ALLOW, allowed.join(", "))
    }

    pub fn payload_too_large(limit_bytes: usize) -> Self {
        Self::with_status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("Request body is larger than {} bytes", limit_bytes),
        )
    }

    pub fn unsupported_media_type() -> Self {
        Self::with_status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Content-Type must be application/json",
        )
    }

    /// A failure from below a service: 503 with `Retry-After` when the storage could not be
    /// reached (a [`idconsent_kernel::StorageUnavailable`] in its source chain) — the request
    /// was fine, the service is temporarily unable — else an internal failure (500).
    pub fn failure(cause: &(dyn std::error::Error + 'static)) -> Self {
        if let Some(unavailable) = idconsent_kernel::storage_unavailable(cause) {
            // One line per request at debug: the workers log the outage itself once.
            tracing::debug!(reason = %unavailable.reason, "answered 503: storage unavailable");
            let mut error =
                Self::unavailable(SERVICE_UNAVAILABLE_MESSAGE, DATABASE_RETRY_AFTER_SECS);
            error.unavailable_cause = Some("database");
            return error;
        }
        Self::internal(crate::errors::chain(cause))
    }

    /// Names why a 503 was answered, for `http_unavailable{cause}`.
    pub fn with_cause(mut self, cause: &'static str) -> Self {
        self.unavailable_cause = Some(cause);
        self
    }

    /// Whether this is a 503 (the storage could not be reached).
    pub fn is_unavailable(&self) -> bool {
        self.status == StatusCode::SERVICE_UNAVAILABLE
    }

    /// An internal failure: logged once here (inside the request's span, so with its request
    /// id), answered with an opaque 500.
    pub fn internal(cause: impl fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(ErrorCategory::Internal, "Internal server error")
    }

    /// A plain envelope for a status actix produced itself (404 of an unknown route, …).
    pub fn for_status(status: StatusCode) -> Self {
        let (kind, message) = match status.as_u16() {
            400 => ("bad_request", "Bad request"),
            401 => ("unauthorized", "Unauthorized"),
            403 => ("forbidden", "Forbidden"),
            404 => ("not_found", "Not found"),
            405 => ("method_not_allowed", "Method not allowed"),
            409 => ("conflict", "Conflict"),
            410 => ("gone", "Gone"),
            413 => ("payload_too_large", "Request body too large"),
            415 => ("unsupported_media_type", "Unsupported Content-Type"),
            422 => ("validation_error", "Invalid request"),
            429 => ("rate_limited", "Too many requests"),
            status if status < 500 => ("bad_request", "Bad request"),
            _ => ("server_error", "Internal server error"),
        };
        Self::with_status(status, kind, message)
    }

    pub fn header(mut self, name: HeaderName, value: impl AsRef<str>) -> Self {
        if let Ok(value) = HeaderValue::from_str(value.as_ref()) {
            self.headers.push((name, value));
        }
        self
    }

    /// Response headers of the error (e.g. a gate's `RateLimit-*`).
    pub fn with_headers(mut self, headers: &[(&'static str, String)]) -> Self {
        for (name, value) in headers {
            if let (Ok(name), Ok(value)) =
                (HeaderName::try_from(*name), HeaderValue::from_str(value))
            {
                self.headers.push((name, value));
            }
        }
        self
    }

    pub fn with_details(mut self, details: Vec<FieldError>) -> Self {
        self.details = details.into_iter().map(Into::into).collect();
        self
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.status.as_u16(),
            error: true,
            kind: self.kind,
            message: self.message.clone(),
            details: self
                .details
                .iter()
                .map(|d| FieldErrorBody {
                    field: d.field.clone(),
                    message: d.message.clone(),
                })
                .collect(),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        for (name, value) in &self.headers {
            response.insert_header((name.clone(), value.clone()));
        }
        let mut response = response.json(self.body());
        if let Some(cause) = self.unavailable_cause {
            response.extensions_mut().insert(UnavailableCause(cause));
        }
        response
    }
}

impl From<ValidationErrors> for ApiError {
    fn from(errors: ValidationErrors) -> Self {
        Self::validation(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;

    fn json_of(error: ApiError) -> serde_json::Value {
        let response = error.error_response();
        let bytes = response.into_body().try_into_bytes().unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn validation_errors_list_every_field() {
        let mut errors = ValidationErrors::new();
        errors.push(
            "recipient",
            "must be an E.164 phone number such as +15551234567",
        );
        errors.push("transaction.amount", "must be >= 0");
        let body = json_of(ApiError::validation(errors));
        assert_eq!(body["code"], 422);
        assert_eq!(body["error"], true);
        assert_eq!(body["type"], "validation_error");
        assert_eq!(body["details"][1]["field"], "transaction.amount");
    }

    #[test]
    fn internal_errors_reveal_nothing() {
        let body = json_of(ApiError::internal(
            "SELECT * FROM secrets failed at /srv/db",
        ));
        assert_eq!(body["message"], "Internal server error");
        assert_eq!(body["type"], "server_error");
        assert!(body.get("details").is_none());
    }

    #[test]
    fn rate_limits_say_when_to_come_back() {
        let response = ApiError::rate_limited("Too many requests", 30).error_response();
        assert_eq!(response.headers().get(header::RETRY_AFTER).unwrap(), "30");
    }
}
