//! `{base}/approve/{kind}/{id}`: the hosted page of any object an email recipient decides, and
//! the JSON steps its script calls. On a page whose visitors name themselves (a signature
//! request's signers) every step carries the visitor's `email`; elsewhere it is ignored.

use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use idconsent_approval::{Purpose, PurposeKind};
use idconsent_hosted::HostedError;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use super::HostedState;
use super::at::{At, PageAt};
use super::page::{hardened, html_page, unavailable_page};
use super::render::{render, render_closed};
use super::steps::{
    self, DecisionStep, HostedAssertionOptions, HostedCreationOptions, HostedDecision,
    HostedPageToken,
};
use crate::http::envelope::{Empty, Envelope};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiJson, JSON_LIMIT, check_json_request, parse_json, read_body};

/// The generic page's path prefix; `{kind}` is the purpose type (`mandate`, `signature`, …).
pub const GENERIC: &str = "/approve/{kind}";

/// Registers every step under `prefix` (`/approve/{kind}`, or an alias of `kind`'s pages).
pub fn register(config: &mut ServiceConfig, prefix: &str, kind: Option<PurposeKind>) {
    // A step: its path under the page, its method, its handler (documented by `__path_<handler>`).
    macro_rules! step {
        ($path:literal, $method:ident, $handler:ident, $doc:ident) => {
            config.service(At::new(
                format!("{prefix}/{{id}}{}", $path),
                kind.clone(),
                web::$method().to($handler),
                $doc,
            ))
        };
    }
    step!("", get, page, __path_page);
    step!("/code", post, send_code, __path_send_code);
    step!("/code/verify", post, verify_code, __path_verify_code);
    step!("/document", post, document, __path_document);
    step!(
        "/passkey/registration",
        post,
        passkey_registration,
        __path_passkey_registration
    );
    step!(
        "/passkey/assertion",
        post,
        passkey_assertion,
        __path_passkey_assertion
    );
    step!("/decision", post, decide, __path_decide);
}

impl HostedState {
    /// The purpose a step on the page at `at` decides, for the visitor `email` names.
    fn purpose(&self, at: &PageAt, email: Option<&str>) -> Result<Purpose, ApiError> {
        Ok(self.hosted.purpose(&at.kind, &at.id, email)?)
    }
}

/// The page: what the kind's target says to show, then the steps (emailed code, a passkey
/// when the target requires one, the decision). An object no longer pending shows what it is
/// now (409).
#[utoipa::path(
    get,
    path = "/approve/{kind}/{id}",
    tag = "hosted",
    params(
        ("kind" = String, Path, description = "The purpose type (`mandate`, `signature`, …)"),
        ("id" = String, Path, description = "The object's id (`md_…`, `sr_…`, …)")
    ),
    responses(
        (status = 200, description = "The page (HTML, strict Content-Security-Policy)", content_type = "text/html", body = String),
        (status = 404, description = "No such object, or one decided in the app", body = ErrorBody),
        (status = 409, description = "No longer pending (HTML)", content_type = "text/html", body = String)
    )
)]
async fn page(state: HostedState, req: HttpRequest, at: PageAt) -> Result<HttpResponse, ApiError> {
    let nonce = state.hosted.page_nonce();
    match state.hosted.page(&at.kind, &at.id).await {
        Ok(page) => Ok(html_page(&nonce, render(&page, req.path(), &nonce))),
        Err(HostedError::NotPending(status)) => {
            let mut response = html_page(&nonce, render_closed(&status));
            *response.status_mut() = StatusCode::CONFLICT;
            Ok(response)
        }
        Err(error) => {
            let error = ApiError::from(error);
            if error.is_unavailable() {
                return Ok(unavailable_page());
            }
            Err(error)
        }
    }
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct PageAddressBody {
    /// The visitor's address, on pages whose visitors name themselves (a signer).
    #[serde(default)]
    email: Option<String>,
}

/// Emails a 6-digit code to the visitor (one a minute; none while locked after five wrong
/// codes). Counts against the caller's sending allowance (CONTRACT §9). The body may be
/// omitted where the page names its recipient.
#[utoipa::path(
    post,
    path = "/approve/{kind}/{id}/code",
    tag = "hosted",
    params(("kind" = String, Path, description = "The purpose type"), ("id" = String, Path, description = "The object's id")),
    request_body = PageAddressBody,
    responses(
        (status = 202, description = "Code sent", body = Envelope<Empty>),
        (status = 404, description = "No such object or visitor for a hosted page", body = ErrorBody),
        (status = 409, description = "No longer pending, or this visitor already answered", body = ErrorBody),
        (status = 429, description = "Sent less than a minute ago, locked, or too many sends; see Retry-After", body = ErrorBody)
    )
)]
async fn send_code(
    state: HostedState,
    req: HttpRequest,
    at: PageAt,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    // Nothing to say when the page names its recipient: no body is no address.
    let body: PageAddressBody = if req.content_type().is_empty() && no_body(&req) {
        PageAddressBody::default()
    } else {
        let declared = check_json_request(&req, JSON_LIMIT)?;
        parse_json(&read_body(payload.into_inner(), declared, JSON_LIMIT).await?)?
    };
    let purpose = state.purpose(&at, body.email.as_deref())?;
    steps::send_code(&state, &req, &purpose).await
}

fn no_body(req: &HttpRequest) -> bool {
    req.headers()
        .get(actix_web::http::header::CONTENT_LENGTH)
        .is_none_or(|length| length.as_bytes() == b"0")
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PageCodeBody {
    #[serde(default)]
    email: Option<String>,
    /// The 6 digits from the email.
    code: String,
}

/// Checks the emailed code; a right one returns the page token. Each guess takes one of five
/// attempts before it is compared; the fifth wrong one locks this address for 15 minutes.
#[utoipa::path(
    post,
    path = "/approve/{kind}/{id}/code/verify",
    tag = "hosted",
    params(("kind" = String, Path, description = "The purpose type"), ("id" = String, Path, description = "The object's id")),
    request_body = PageCodeBody,
    responses(
        (status = 200, description = "The page token", body = Envelope<HostedPageToken>),
        (status = 401, description = "Wrong or expired code", body = ErrorBody),
        (status = 429, description = "Locked after five wrong codes; see Retry-After", body = ErrorBody)
    )
)]
async fn verify_code(
    state: HostedState,
    at: PageAt,
    body: ApiJson<PageCodeBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let purpose = state.purpose(&at, body.email.as_deref())?;
    steps::verify_code(&state, &purpose, &body.code).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PageTokenBody {
    #[serde(default)]
    email: Option<String>,
    token: String,
}

/// The page's document (a PDF to sign), for a confirmed visitor only.
#[utoipa::path(
    post,
    path = "/approve/{kind}/{id}/document",
    tag = "hosted",
    params(("kind" = String, Path, description = "The purpose type"), ("id" = String, Path, description = "The object's id")),
    request_body = PageTokenBody,
    responses(
        (status = 200, description = "The document as uploaded", content_type = "application/pdf", body = Vec<u8>),
        (status = 401, description = "No live page token", body = ErrorBody),
        (status = 404, description = "No such object, or it has no document", body = ErrorBody),
        (status = 410, description = "The document is no longer stored", body = ErrorBody)
    )
)]
async fn document(
    state: HostedState,
    at: PageAt,
    body: ApiJson<PageTokenBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let purpose = state.purpose(&at, body.email.as_deref())?;
    let document = state.hosted.document(&purpose, &at.id, &body.token).await?;
    Ok(hardened(HttpResponse::Ok())
        .insert_header((CONTENT_TYPE, document.media_type))
        .insert_header((
            CONTENT_DISPOSITION,
            format!("inline; filename=\"{}\"", document.file_name),
        ))
        .body(document.bytes))
}

/// Options to make a passkey for this decision in the browser.
#[utoipa::path(
    post,
    path = "/approve/{kind}/{id}/passkey/registration",
    tag = "hosted",
    params(("kind" = String, Path, description = "The purpose type"), ("id" = String, Path, description = "The object's id")),
    request_body = PageTokenBody,
    responses(
        (status = 200, description = "Creation options", body = Envelope<HostedCreationOptions>),
        (status = 401, description = "No live page token", body = ErrorBody)
    )
)]
async fn passkey_registration(
    state: HostedState,
    at: PageAt,
    body: ApiJson<PageTokenBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let purpose = state.purpose(&at, body.email.as_deref())?;
    steps::passkey_registration(&state, &purpose, &body.token).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageCredentialBody {
    #[serde(default)]
    email: Option<String>,
    token: String,
    /// The `PublicKeyCredential` (WebAuthn JSON).
    #[schema(value_type = Object)]
    credential: Value,
    /// The page's `data-context-hash`: the hash of what it shows.
    context_hash: String,
}

/// Keeps the new passkey and returns assertion options whose challenge commits to the object
/// as it is now — only if the page showed it so (`contextHash`), else 409 and the page is to be
/// reloaded.
#[utoipa::path(
    post,
    path = "/approve/{kind}/{id}/passkey/assertion",
    tag = "hosted",
    params(("kind" = String, Path, description = "The purpose type"), ("id" = String, Path, description = "The object's id")),
    request_body = PageCredentialBody,
    responses(
        (status = 200, description = "Assertion options", body = Envelope<HostedAssertionOptions>),
        (status = 401, description = "No live page token, or the passkey did not verify", body = ErrorBody),
        (status = 409, description = "Changed after the page was loaded (`contextHash`): reload it", body = ErrorBody)
    )
)]
async fn passkey_assertion(
    state: HostedState,
    at: PageAt,
    body: ApiJson<PageCredentialBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let purpose = state.purpose(&at, body.email.as_deref())?;
    steps::passkey_assertion(
        &state,
        &purpose,
        &body.token,
        &body.credential,
        &body.context_hash,
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageDecisionBody {
    #[serde(default)]
    email: Option<String>,
    token: String,
    /// `approve` or `reject`.
    decision: String,
    /// The page's `data-context-hash`: the hash of what it shows.
    context_hash: String,
    /// The assertion of the passkey step; required when the object requires a passkey (a
    /// mandate always, a signature request with `requireBiometric`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    credential: Option<Value>,
}

/// Approves or declines, once per page token, with the passkey's assertion where the object
/// requires one. 409 when the object changed since the page was loaded (`contextHash`; the
/// token is kept for the reloaded page) or since the challenge.
#[utoipa::path(
    post,
    path = "/approve/{kind}/{id}/decision",
    tag = "hosted",
    params(("kind" = String, Path, description = "The purpose type"), ("id" = String, Path, description = "The object's id")),
    request_body = PageDecisionBody,
    responses(
        (status = 200, description = "Decided", body = Envelope<HostedDecision>),
        (status = 401, description = "No live page token, or the passkey step is missing or did not verify", body = ErrorBody),
        (status = 409, description = "No longer pending, already answered, or changed since the page was loaded or the challenge", body = ErrorBody),
        (status = 422, description = "Unknown decision", body = ErrorBody)
    )
)]
async fn decide(
    state: HostedState,
    req: HttpRequest,
    at: PageAt,
    body: ApiJson<PageDecisionBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let purpose = state.purpose(&at, body.email.as_deref())?;
    let step = DecisionStep {
        token: &body.token,
        decision: &body.decision,
        shown: &body.context_hash,
        assertion: body.credential.as_ref(),
    };
    steps::decide(&state, &req, &purpose, step).await
}
