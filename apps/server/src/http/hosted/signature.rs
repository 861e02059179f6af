//! `{base}/sign/{id}`: the hosted signing page of a signature request (issue 15), and the JSON
//! steps its script calls. The signer names their address in the code step: every step carries
//! it, and the purpose is `signature` with id `sr_…:<address>` (one confirmation per signer).
//! The document is served only to a confirmed signer (with the page token).

use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use idconsent_approval::Purpose;
use idconsent_hosted::HostedApprovals;
use idconsent_kernel::{OsRandom, RandomSource};
use idconsent_notification::SendLimits;
use idconsent_signature::SignatureApprovals;
use idconsent_signature::SignatureService;
use idconsent_signature::{RequestStatus, SignatureError, SignatureRequest};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::page::{STEPS_STYLE, escape, hardened, html_page, steps_script, unavailable_page};
use super::steps::{
    self, DecisionStep, HostedAssertionOptions, HostedCreationOptions, HostedDecision,
    HostedPageToken,
};
use crate::http::envelope::{Empty, Envelope};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

/// The purpose of one signer of one request.
fn purpose(id: &str, email: &str) -> Purpose {
    Purpose::new(SignatureApprovals::KIND, format!("{id}:{}", email.trim()))
}

async fn request(signatures: &SignatureService, id: &str) -> Result<SignatureRequest, ApiError> {
    signatures.load(id).await.map_err(|error| match error {
        SignatureError::NotFound(_) => ApiError::not_found("Not found"),
        other => other.into(),
    })
}

/// The signing page: the document's fingerprint and size, then the steps (your address and the
/// emailed code, a passkey when the request requires one, Sign or Decline). A request no longer
/// pending shows what it is now (409).
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    responses(
        (status = 200, description = "The page (HTML, strict Content-Security-Policy)", content_type = "text/html", body = String),
        (status = 404, description = "No such signature request", body = ErrorBody),
        (status = 409, description = "No longer pending (HTML)", content_type = "text/html", body = String)
    )
)]
#[get("/sign/{id}")]
pub async fn page(
    signatures: web::Data<SignatureService>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let nonce = (&OsRandom as &dyn RandomSource).hex(16);
    let request = match request(&signatures, &id).await {
        Ok(request) => request,
        Err(error) if error.is_unavailable() => return Ok(unavailable_page()),
        Err(error) => return Err(error),
    };
    let status = request.status_at(signatures.now());
    if status != RequestStatus::Pending {
        let mut response = html_page(&nonce, render_closed(status.as_str()));
        *response.status_mut() = StatusCode::CONFLICT;
        return Ok(response);
    }
    Ok(html_page(&nonce, render(&request, &nonce)))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SigningAddressBody {
    /// The signer's address, as the request names it.
    email: String,
}

/// Emails a 6-digit code to a signer of the request (one a minute; none while locked after five
/// wrong codes). An address that is not a signer is 404.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    request_body = SigningAddressBody,
    responses(
        (status = 202, description = "Code sent", body = Envelope<Empty>),
        (status = 404, description = "No such request or signer", body = ErrorBody),
        (status = 409, description = "No longer pending, or this signer already answered", body = ErrorBody),
        (status = 429, description = "Sent less than a minute ago, locked, or too many sends; see Retry-After", body = ErrorBody)
    )
)]
#[post("/sign/{id}/code")]
pub async fn send_code(
    hosted: web::Data<HostedApprovals>,
    send_limits: web::Data<SendLimits>,
    req: HttpRequest,
    id: web::Path<String>,
    body: ApiJson<SigningAddressBody>,
) -> Result<HttpResponse, ApiError> {
    steps::send_code(&hosted, &send_limits, &req, &purpose(&id, &body.0.email)).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SigningCodeBody {
    email: String,
    code: String,
}

/// Checks the emailed code; a right one returns the page token (five attempts, then locked for
/// 15 minutes).
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    request_body = SigningCodeBody,
    responses(
        (status = 200, description = "The page token", body = Envelope<HostedPageToken>),
        (status = 401, description = "Wrong or expired code", body = ErrorBody),
        (status = 429, description = "Locked after five wrong codes; see Retry-After", body = ErrorBody)
    )
)]
#[post("/sign/{id}/code/verify")]
pub async fn verify_code(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
    body: ApiJson<SigningCodeBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    steps::verify_code(&hosted, &purpose(&id, &body.email), &body.code).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SigningTokenBody {
    email: String,
    token: String,
}

/// The uploaded document, for a confirmed signer only.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    request_body = SigningTokenBody,
    responses(
        (status = 200, description = "The PDF as uploaded", content_type = "application/pdf", body = Vec<u8>),
        (status = 401, description = "No live page token", body = ErrorBody),
        (status = 410, description = "The document is no longer stored", body = ErrorBody)
    )
)]
#[post("/sign/{id}/document")]
pub async fn document(
    hosted: web::Data<HostedApprovals>,
    signatures: web::Data<SignatureService>,
    id: web::Path<String>,
    body: ApiJson<SigningTokenBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    hosted
        .confirmed_address(&purpose(&id, &body.email), &body.token)
        .await?;
    let request = request(&signatures, &id).await?;
    let pdf = signatures.document(&request).await?;
    Ok(hardened(HttpResponse::Ok())
        .insert_header((CONTENT_TYPE, "application/pdf"))
        .insert_header((
            CONTENT_DISPOSITION,
            format!("inline; filename=\"{}.pdf\"", request.id),
        ))
        .body(pdf))
}

/// Options to make a passkey for this signature in the browser.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    request_body = SigningTokenBody,
    responses(
        (status = 200, description = "Creation options", body = Envelope<HostedCreationOptions>),
        (status = 401, description = "No live page token", body = ErrorBody)
    )
)]
#[post("/sign/{id}/passkey/registration")]
pub async fn passkey_registration(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
    body: ApiJson<SigningTokenBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    steps::passkey_registration(&hosted, &purpose(&id, &body.email), &body.token).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningCredentialBody {
    email: String,
    token: String,
    #[schema(value_type = Object)]
    credential: Value,
    /// The page's `data-context-hash`: the hash of the request and document it shows.
    context_hash: String,
}

/// Keeps the new passkey and returns assertion options over the document and the signer — only
/// if the page showed this request as it is (`contextHash`), else 409 and the page is to be
/// reloaded.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    request_body = SigningCredentialBody,
    responses(
        (status = 200, description = "Assertion options", body = Envelope<HostedAssertionOptions>),
        (status = 401, description = "No live page token, or the passkey did not verify", body = ErrorBody),
        (status = 409, description = "Not what the page showed (`contextHash`): reload it", body = ErrorBody)
    )
)]
#[post("/sign/{id}/passkey/assertion")]
pub async fn passkey_assertion(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
    body: ApiJson<SigningCredentialBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let purpose = purpose(&id, &body.email);
    steps::passkey_assertion(
        &hosted,
        &purpose,
        &body.token,
        &body.credential,
        &body.context_hash,
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SigningDecisionBody {
    email: String,
    token: String,
    /// `approve` (sign) or `reject` (decline).
    decision: String,
    /// The page's `data-context-hash`: the hash of the request and document it shows.
    context_hash: String,
    /// The assertion of the passkey step; required when the request requires biometrics.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    credential: Option<Value>,
}

/// Signs or declines, once per page token; with `requireBiometric` only with the passkey's
/// assertion. The last signature completes the request (`signature.completed`).
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`sr_…`")),
    request_body = SigningDecisionBody,
    responses(
        (status = 200, description = "Answered", body = Envelope<HostedDecision>),
        (status = 401, description = "No live page token, or the passkey step is missing or did not verify", body = ErrorBody),
        (status = 409, description = "No longer pending, this signer already answered, or not what the page showed (`contextHash`)", body = ErrorBody),
        (status = 422, description = "Unknown decision", body = ErrorBody)
    )
)]
#[post("/sign/{id}/decision")]
pub async fn decide(
    hosted: web::Data<HostedApprovals>,
    signatures: web::Data<SignatureService>,
    req: HttpRequest,
    id: web::Path<String>,
    body: ApiJson<SigningDecisionBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let request = request(&signatures, &id).await?;
    let purpose = purpose(&id, &body.email);
    let step = DecisionStep {
        token: &body.token,
        decision: &body.decision,
        shown: &body.context_hash,
        assertion: body.credential.as_ref(),
        passkey_required: request.require_biometric,
    };
    steps::decide(&hosted, &req, &purpose, step)
        .await
        .map_err(|error| {
            if actix_web::ResponseError::status_code(&error) == StatusCode::NOT_FOUND {
                ApiError::not_found("No such signer on this request")
            } else {
                error
            }
        })
}

fn render_closed(status: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Signature request</title></head><body><main><h1>Nothing to sign</h1>\
         <p id=\"closed\">This signature request is {}.</p></main></body></html>\n",
        escape(status)
    )
}

fn render(request: &SignatureRequest, nonce: &str) -> String {
    let script = steps_script(nonce);
    let id = escape(request.id.as_str());
    let passkey = if request.require_biometric {
        "required"
    } else {
        "none"
    };
    let signers = request.signers.len();
    let pages = request.document_pages;
    let sha256 = escape(&request.document_sha256);
    let expires = escape(&request.expires_at.to_rfc3339());
    let page_hash = escape(&idconsent_signature::page_hash(request));
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>Sign a document</title>
<style nonce="{nonce}">{STEPS_STYLE}
#viewer{{width:100%;height:60vh;border:1px solid #d0d4dc;border-radius:8px}}</style>
</head>
<body>
<main id="steps" data-base="/sign/{id}" data-context-hash="{page_hash}" data-passkey="{passkey}" data-approved="Signed." data-declined="Declined.">
<h1>Sign a document</h1>
<p>A PDF of {pages} page(s) awaits {signers} signer(s), until {expires}.</p>
<p class="note">Its SHA-256 fingerprint: <code id="sha256">{sha256}</code></p>
<section id="step-code">
<p><label>Your email address <input id="email" type="email" autocomplete="email"></label></p>
<button id="send">Email me a code</button>
<p><label>Code <input id="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6"></label>
<button id="verify">Confirm</button></p>
</section>
<iframe id="viewer" title="The document" hidden></iframe>
<p><a id="document" hidden target="_blank" rel="noopener">Open the document in a new tab</a></p>
<section id="step-passkey" hidden>
<p>Confirm with a passkey on this device (fingerprint, face or screen lock).</p>
<button id="passkey">Use a passkey</button>
</section>
<section id="step-decide" hidden>
<p>Do you sign this document?</p>
<button id="approve">Sign</button>
<button id="reject" class="secondary">Decline</button>
</section>
<p id="status" role="status" aria-live="polite"></p>
<button id="reload" hidden>Reload the page</button>
</main>
{script}
</body>
</html>
"#
    )
}
