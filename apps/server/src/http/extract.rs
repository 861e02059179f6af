//! Request extraction with our envelope: JSON bodies (size, Content-Type, precise parse errors)
//! and the operator's bearer token.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use secrecy::ExposeSecret;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use crate::http::error::ApiError;

/// Largest JSON body (CONTRACT §1).
pub const JSON_LIMIT: usize = 1 << 20;
/// Largest body of endpoints that carry base64 files.
pub const FILE_LIMIT: usize = 15 << 20;

/// A JSON body of at most `LIMIT` bytes, parsed into `T`.
///
/// Errors: wrong Content-Type → 415; too large → 413; malformed JSON, a wrong JSON type or a
/// missing field → 400 naming the field. Values that parse but are invalid are the handler's
/// business (422).
#[derive(Debug)]
pub struct ApiJson<T, const LIMIT: usize = JSON_LIMIT>(pub T);

type Pending<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

impl<T: DeserializeOwned + 'static, const LIMIT: usize> FromRequest for ApiJson<T, LIMIT> {
    type Error = ApiError;
    type Future = Pending<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let checked = check_json_request(req, LIMIT);
        let payload = payload.take();
        Box::pin(async move {
            let declared = checked?;
            let bytes = read_body(payload, declared, LIMIT).await?;
            parse_json(&bytes).map(ApiJson)
        })
    }
}

/// Checks Content-Type and the declared length before any byte is read.
pub fn check_json_request(req: &HttpRequest, limit: usize) -> Result<Option<usize>, ApiError> {
    if !is_json(req) {
        return Err(ApiError::unsupported_media_type());
    }
    let declared = declared_length(req);
    if declared.is_some_and(|length| length > limit) {
        return Err(ApiError::payload_too_large(limit));
    }
    Ok(declared)
}

fn is_json(req: &HttpRequest) -> bool {
    match req.mime_type() {
        Ok(Some(mime)) => {
            mime.type_() == "application"
                && (mime.subtype() == "json" || mime.suffix().is_some_and(|s| s == "json"))
        }
        _ => false,
    }
}

fn declared_length(req: &HttpRequest) -> Option<usize> {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// Reads the whole body, refusing more than `limit` bytes whatever the headers claimed.
pub async fn read_body(
    mut payload: Payload,
    declared: Option<usize>,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let mut body = BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk =
            chunk.map_err(|_| ApiError::bad_request("The request body could not be read"))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::payload_too_large(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The deepest nesting of arrays and objects a body may have (CONTRACT §1).
pub const MAX_JSON_DEPTH: usize = 128;

/// Whether `bytes` nest arrays and objects deeper than `max`, wherever that happens — also in
/// a field the endpoint ignores, which serde would skip over. One pass over the bytes, strings
/// (and their escapes) skipped.
fn nests_deeper_than(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses JSON, naming the offending field on failure: malformed JSON, nesting deeper than 128,
/// a missing field, `null` or a wrong JSON type → 400; a well-formed value out of range (a
/// negative size, an integer too large) → 422.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request(
            "The request body must be a JSON object",
        ));
    }
    if nests_deeper_than(bytes, MAX_JSON_DEPTH) {
        return Err(ApiError::bad_request(format!(
            "Malformed JSON: nested deeper than {MAX_JSON_DEPTH} levels"
        )));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let field = error.path().to_string();
        let inner = error.into_inner();
        match inner.classify() {
            // serde says "invalid value" when the JSON type was right but the value is not one
            // the field takes (`-1` for a size); a wrong type is "invalid type".
            serde_json::error::Category::Data
                if field != "." && inner.to_string().starts_with("invalid value") =>
            {
                let mut errors = idconsent_kernel::ValidationErrors::new();
                errors.push(field, inner.to_string());
                ApiError::validation(errors)
            }
            serde_json::error::Category::Data if field != "." => {
                ApiError::bad_request(format!("Invalid request body: {field}: {inner}"))
                    .with_details(vec![idconsent_kernel::FieldError::new(
                        field,
                        inner.to_string(),
                    )])
            }
            serde_json::error::Category::Data => {
                ApiError::bad_request(format!("Invalid request body: {inner}"))
            }
            _ => malformed(&inner),
        }
    })?;
    deserializer.end().map_err(|error| malformed(&error))?;
    Ok(value)
}

fn malformed(error: &serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("Malformed JSON: {error}"))
}

/// A shared service as a handler argument, for an area's `register`.
pub(crate) fn data<T: ?Sized>(service: &std::sync::Arc<T>) -> web::Data<T> {
    web::Data::from(service.clone())
}

/// What an extractor needs from the app: a service its area registered (a missing one is a
/// wiring mistake, hence 500).
pub(crate) fn app_data<T: ?Sized + 'static>(req: &HttpRequest) -> Result<web::Data<T>, ApiError> {
    req.app_data::<web::Data<T>>()
        .cloned()
        .ok_or_else(|| ApiError::internal(format!("{} not registered", std::any::type_name::<T>())))
}

/// The platform operator, authenticated by `Authorization: Bearer <IDC_ADMIN_TOKEN>`.
#[derive(Debug, Clone, Copy)]
pub struct Operator;

impl FromRequest for Operator {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(authenticate_operator(req))
    }
}

/// The operator's token (`IDC_ADMIN_TOKEN`), registered once for the [`Operator`] door.
#[derive(Debug, Clone)]
pub struct OperatorToken(pub secrecy::SecretString);

fn authenticate_operator(req: &HttpRequest) -> Result<Operator, ApiError> {
    let token = app_data::<OperatorToken>(req)?;
    let presented =
        bearer_token(req).ok_or_else(|| ApiError::unauthorized("Missing bearer token"))?;
    let expected = token.0.expose_secret().as_bytes();
    if bool::from(presented.as_bytes().ct_eq(expected)) {
        Ok(Operator)
    } else {
        Err(ApiError::unauthorized("Invalid operator token"))
    }
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer_token(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Create {
        client_id: String,
        transaction: Transaction,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Transaction {
        amount: f64,
    }

    fn message_of(bytes: &[u8]) -> String {
        let error = parse_json::<Create>(bytes).unwrap_err();
        assert_eq!(error.body().code, 400);
        error.body().message
    }

    #[test]
    fn nesting_deeper_than_128_is_malformed_wherever_it_is() {
        let deep = |levels: usize| {
            format!(
                r#"{{"clientId":"x","transaction":{{"amount":1}},"ignored":{}{}}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        // 1 (the body) + 127 = 128 levels: fine; one more is not, though serde ignores the field.
        assert!(parse_json::<Create>(deep(127).as_bytes()).is_ok());
        let error = parse_json::<Create>(deep(128).as_bytes()).unwrap_err();
        assert_eq!(error.body().code, 400);
        assert!(
            error.body().message.contains("nested deeper"),
            "{}",
            error.body().message
        );
        // Brackets inside strings are text.
        let text = format!(
            r#"{{"clientId":"{}","transaction":{{"amount":1}}}}"#,
            "[".repeat(500)
        );
        assert!(parse_json::<Create>(text.as_bytes()).is_ok());
        let escaped = format!(
            r#"{{"clientId":"\"{}","transaction":{{"amount":1}}}}"#,
            "{".repeat(300)
        );
        assert!(parse_json::<Create>(escaped.as_bytes()).is_ok());
    }

    #[test]
    fn an_out_of_range_value_is_invalid_not_malformed() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Upload {
            size: u64,
        }
        let error = parse_json::<Upload>(br#"{"size": -1}"#).unwrap_err();
        let body = error.body();
        assert_eq!((body.code, body.kind), (422, "validation_error"));
        assert_eq!(body.details[0].field, "size");
        // A wrong JSON type and null stay 400.
        assert_eq!(
            parse_json::<Upload>(br#"{"size": "1"}"#)
                .unwrap_err()
                .body()
                .code,
            400
        );
        assert_eq!(
            parse_json::<Upload>(br#"{"size": null}"#)
                .unwrap_err()
                .body()
                .code,
            400
        );
    }

    #[test]
    fn names_the_field_with_the_wrong_type() {
        let error = parse_json::<Create>(br#"{"clientId":"x","transaction":{"amount":"ten"}}"#)
            .unwrap_err();
        let body = error.body();
        assert_eq!(body.details[0].field, "transaction.amount");
        assert!(body.message.contains("invalid type"), "{}", body.message);
    }

    #[test]
    fn reports_missing_fields_and_malformed_json() {
        assert!(
            message_of(br#"{"transaction":{"amount":1}}"#).contains("missing field `clientId`")
        );
        assert!(
            message_of(br#"{"clientId":"x","transaction":{"amo"#).starts_with("Malformed JSON")
        );
        assert!(message_of(b"").contains("must be a JSON object"));
        assert!(
            message_of(br#"{"clientId":"x","transaction":{"amount":1}} trailing"#)
                .starts_with("Malformed JSON")
        );
    }

    #[test]
    fn refuses_nesting_deeper_than_128() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let error = parse_json::<serde_json::Value>(deep.as_bytes()).unwrap_err();
        assert_eq!(error.body().code, 400);
        assert!(
            error.body().message.contains("nested deeper than 128"),
            "{}",
            error.body().message
        );
    }
}
