//! Authentication extractors: `MerchantSession` (J), `Signed` (S). `Operator` lives in `extract`.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::{FromRequest, HttpMessage, HttpRequest, HttpResponse, web};
use bytes::Bytes;
use idconsent_access::RequestGate;
use idconsent_access::ports::StoredResponse;
use idconsent_access::{
    AccessError, Caller, GateRequest, Hold, IdempotencyDecision, Refusal, RefusalKind,
    SignedHeaders,
};
use idconsent_merchant::{Actor, MerchantService};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::http::envelope::Envelope;
use crate::http::error::ApiError;
use crate::http::extract::{JSON_LIMIT, app_data, bearer_token, parse_json, read_body};

type Pending<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

/// A signed-in team member (`Authorization: Bearer <merchant JWT>`).
#[derive(Debug, Clone)]
pub struct MerchantSession(pub Actor);

impl FromRequest for MerchantSession {
    type Error = ApiError;
    type Future = Pending<Self>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = bearer_token(req).map(str::to_owned);
        let merchants = app_data::<MerchantService>(req);
        Box::pin(async move {
            let merchants = merchants?;
            let token = token.ok_or_else(|| ApiError::unauthorized("Missing bearer token"))?;
            let actor = merchants.authenticate(&token).await?;
            Ok(MerchantSession(actor))
        })
    }
}

pub const API_KEY: HeaderName = HeaderName::from_static("x-api-key");
pub const TIMESTAMP: HeaderName = HeaderName::from_static("x-timestamp");
pub const SIGNATURE: HeaderName = HeaderName::from_static("x-signature");
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// A request signed with an application's API key (CONTRACT §2.1), with its raw body.
///
/// The only door for server-to-server calls: the key and timestamp are checked before the
/// body is read, the signature over the exact bytes after, then every gate of the chain
/// (rate limits, metering) admits or refuses the request before its handler runs. Handlers
/// parse the body with [`Signed::json`].
#[derive(Debug)]
pub struct Signed<const LIMIT: usize = JSON_LIMIT> {
    pub caller: Caller,
    pub body: Bytes,
    is_json: bool,
    idempotency_key: Option<String>,
    /// The door it came through, which also keeps the idempotency records.
    gate: web::Data<RequestGate>,
    /// What the gates hold while the request runs (concurrency slots); released on drop,
    /// also when the client goes away and the handler is dropped unfinished.
    _holds: Vec<Box<dyn Hold>>,
}

/// Headers the gates add to a signed request's response, whatever its status; the request
/// middleware copies them onto the response.
#[derive(Debug, Clone, Default)]
pub struct GateHeaders(pub Vec<(&'static str, String)>);

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> Self {
        let retry_after = refusal.retry_after_secs.unwrap_or(1);
        let error = match refusal.kind {
            RefusalKind::RateLimited | RefusalKind::QuotaExceeded => {
                ApiError::rate_limited(refusal.message, retry_after)
            }
            RefusalKind::Forbidden => ApiError::forbidden(refusal.message),
            RefusalKind::Unavailable => ApiError::unavailable(refusal.message, retry_after),
        };
        error
            .with_details(refusal.details)
            .with_headers(&refusal.headers)
    }
}

fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_owned())
}

impl<const LIMIT: usize> FromRequest for Signed<LIMIT> {
    type Error = ApiError;
    type Future = Pending<Self>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let headers = req.headers();
        let api_key = header_text(headers, &API_KEY);
        let timestamp = header_text(headers, &TIMESTAMP);
        let signature = header_text(headers, &SIGNATURE);
        let idempotency_key = headers
            .get(&IDEMPOTENCY_KEY)
            .map(|value| value.to_str().map(str::to_owned).unwrap_or_default());
        let is_json = matches!(req.mime_type(), Ok(Some(mime))
            if mime.type_() == "application" && (mime.subtype() == "json" || mime.suffix().is_some_and(|s| s == "json")));
        let declared = headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let payload = payload.take();
        let gate = app_data::<RequestGate>(req);
        let req = req.clone();
        Box::pin(async move {
            let gate = gate?;
            let identified = gate
                .access
                .identify(SignedHeaders {
                    api_key: api_key.as_deref(),
                    timestamp: timestamp.as_deref(),
                    signature: signature.as_deref(),
                })
                .await?;
            if declared.is_some_and(|length| length > LIMIT) {
                return Err(ApiError::payload_too_large(LIMIT));
            }
            let body = read_body(payload, declared, LIMIT).await?;
            let caller = gate.access.verify(identified, &body).await?;
            let admission = gate
                .gates
                .admit(&GateRequest {
                    caller: &caller,
                    method: req.method().as_str(),
                    route: req.match_pattern().as_deref().unwrap_or_else(|| req.path()),
                    at: gate.now(),
                })
                .await?;
            if !admission.headers.is_empty() {
                req.extensions_mut().insert(GateHeaders(admission.headers));
            }
            Ok(Signed {
                caller,
                body,
                is_json,
                idempotency_key,
                gate,
                _holds: admission.holds,
            })
        })
    }
}

impl<const LIMIT: usize> Signed<LIMIT> {
    /// The body as JSON: 415 without a JSON Content-Type, 400 when it does not parse.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        if !self.is_json {
            return Err(ApiError::unsupported_media_type());
        }
        parse_json(&self.body)
    }

    /// Runs `create` at most once per `Idempotency-Key` (CONTRACT §1): a repeat with the same
    /// body gets the stored response with `Idempotent-Replayed: true`; the same key with another
    /// body is 409. Without the header, `create` simply runs.
    pub async fn idempotent<F, Fut>(
        &self,
        operation: &str,
        create: F,
    ) -> Result<HttpResponse, ApiError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<JsonReply, ApiError>>,
    {
        let Some(key) = &self.idempotency_key else {
            return create().await.map(JsonReply::into_response);
        };
        let decision = self
            .gate
            .idempotency
            .begin(&self.caller, key, operation, &self.body)
            .await?;
        match decision {
            IdempotencyDecision::Replay(stored) => {
                let mut response = JsonReply {
                    status: StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK),
                    body: stored.body,
                }
                .into_response();
                response
                    .headers_mut()
                    .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
                Ok(response)
            }
            IdempotencyDecision::KeyReused => Err(ApiError::conflict(
                "This Idempotency-Key was already used with a different request",
            )),
            IdempotencyDecision::InProgress => Err(ApiError::conflict(
                "A request with this Idempotency-Key is still in progress",
            )),
            IdempotencyDecision::Proceed(ticket) => {
                let outcome = create().await;
                let stored = outcome.as_ref().ok().map(|reply| StoredResponse {
                    status: reply.status.as_u16(),
                    body: reply.body.clone(),
                });
                self.gate.idempotency.finish(ticket, stored).await?;
                outcome.map(JsonReply::into_response)
            }
        }
    }
}

/// A JSON response kept as bytes, so it can be stored for idempotent replay.
#[derive(Debug, Clone)]
pub struct JsonReply {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl JsonReply {
    /// The success envelope.
    pub fn envelope<T: Serialize>(
        status: StatusCode,
        message: impl Into<String>,
        data: T,
    ) -> Result<Self, ApiError> {
        let body = serde_json::to_vec(&Envelope {
            code: status.as_u16(),
            error: false,
            message: message.into(),
            data,
        })
        .map_err(ApiError::internal)?;
        Ok(Self { status, body })
    }

    pub fn into_response(self) -> HttpResponse {
        HttpResponse::build(self.status)
            .content_type("application/json")
            .body(self.body)
    }
}

impl From<AccessError> for ApiError {
    fn from(error: AccessError) -> Self {
        match error {
            AccessError::Denied(denied) => ApiError::unauthorized(denied.to_string()),
            AccessError::InvalidIdempotencyKey => ApiError::bad_request(error.to_string()),
            AccessError::Unavailable(source) => ApiError::failure(&*source),
        }
    }
}
