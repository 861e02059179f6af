//! The one middleware every request passes: request id, tracing span, access log, metrics, and
//! the error envelope for failures that actix produced itself.

use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError, web};
use tracing::Instrument;

use crate::http::auth::GateHeaders;
use crate::http::error::ApiError;
use crate::http::metrics::Metrics;
use crate::wiring::RequestIds;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

pub async fn request_context(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let request_ids = req.app_data::<web::Data<RequestIds>>().cloned();
    let metrics = req.app_data::<web::Data<Metrics>>().cloned();
    let request_id = req
        .headers()
        .get(&REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| is_acceptable_request_id(id))
        .map(str::to_owned)
        .unwrap_or_else(|| match &request_ids {
            Some(request_ids) => request_ids.mint(),
            None => "req_unknown".to_owned(),
        });
    let method = req.method().clone();
    // What the request's own log lines carry; the outcome goes on the final line alone (a
    // field recorded into a span later costs the JSON formatter a re-parse of the span's fields).
    let span = tracing::info_span!(
        "request",
        request.id = %request_id,
        http.method = %method,
    );
    // Handlers and extractors turn their errors into responses themselves; an `Err` here could
    // only come from a middleware further in, and none of ours fails.
    let response = next.call(req).instrument(span).await?;
    let mut response = ensure_error_envelope(response.map_into_boxed_body());
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    add_gate_headers(&mut response);

    let status = response.status().as_u16();
    let route = response
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    let elapsed = started.elapsed();
    if let Some(metrics) = &metrics {
        metrics.observe(method.as_str(), &route, status, elapsed.as_secs_f64());
        let cause = response
            .response()
            .extensions()
            .get::<crate::http::error::UnavailableCause>()
            .copied();
        if let Some(crate::http::error::UnavailableCause(cause)) = cause {
            metrics.unavailable(cause);
        }
    }
    tracing::info!(
        request.id = %request_id,
        http.method = %method,
        http.route = %route,
        http.status = status,
        latency_ms = elapsed.as_secs_f64() * 1_000.0,
        "request finished"
    );
    Ok(response)
}

/// The gate chain's headers (`RateLimit-*`) go on every response of an admitted signed request,
/// whatever the handler answered; a header the handler set itself wins.
fn add_gate_headers(response: &mut ServiceResponse<BoxBody>) {
    let Some(GateHeaders(headers)) = response.request().extensions_mut().remove::<GateHeaders>()
    else {
        return;
    };
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::from_str(&value))
            && !response.headers().contains_key(&name)
        {
            response.headers_mut().insert(name, value);
        }
    }
}

/// Client ids are echoed only when they are short and made of safe characters.
fn is_acceptable_request_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// Failures produced outside our handlers (actix's 404 for undecodable paths, payload errors)
/// get the same JSON envelope as ours.
fn ensure_error_envelope(response: ServiceResponse<BoxBody>) -> ServiceResponse<BoxBody> {
    let status = response.status();
    // JSON is already an envelope; an HTML page is one a person reads (a hosted page's 503).
    let is_envelope_or_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value.starts_with("application/json") || value.starts_with("text/html")
        });
    if status.as_u16() < 400 || is_envelope_or_page {
        return response;
    }
    let (request, original) = response.into_parts();
    let mut replacement = ApiError::for_status(status).error_response();
    for (name, value) in original.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            replacement
                .headers_mut()
                .insert(name.clone(), value.clone());
        }
    }
    ServiceResponse::new(request, replacement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_safe_request_ids_are_echoed() {
        assert!(is_acceptable_request_id("req_01JDKX-abc.def:1"));
        assert!(!is_acceptable_request_id(""));
        assert!(!is_acceptable_request_id("with space"));
        assert!(!is_acceptable_request_id("<script>"));
        assert!(!is_acceptable_request_id(&"a".repeat(129)));
    }
}
