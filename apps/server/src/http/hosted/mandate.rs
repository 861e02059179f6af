//! `{base}/mandates/{id}`: the hosted page of a mandate addressed to an email address, and the
//! JSON steps its script calls.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use idconsent_approval::Purpose;
use idconsent_hosted::HostedApprovals;
use idconsent_hosted::HostedError;
use idconsent_kernel::{OsRandom, RandomSource};
use idconsent_mandate::MandateApprovals;
use idconsent_notification::SendLimits;
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::page::{STEPS_STYLE, escape, html_page, steps_script, unavailable_page};
use super::steps::{
    self, DecisionStep, HostedAssertionOptions, HostedCreationOptions, HostedDecision,
    HostedPageToken,
};
use crate::http::envelope::{Empty, Envelope};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

fn purpose(id: &str) -> Purpose {
    Purpose::new(MandateApprovals::KIND, id)
}

/// The page: the terms, then the steps (emailed code, passkey, decision). A mandate no longer
/// awaiting authorisation shows what it is now (409).
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`md_…` of a mandate addressed to an email")),
    responses(
        (status = 200, description = "The page (HTML, strict Content-Security-Policy)", content_type = "text/html", body = String),
        (status = 404, description = "No such mandate, or one decided in the app", body = ErrorBody),
        (status = 409, description = "No longer awaiting authorisation (HTML)", content_type = "text/html", body = String)
    )
)]
#[get("/mandates/{id}")]
pub async fn page(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let nonce = (&OsRandom as &dyn RandomSource).hex(16);
    match hosted.view(&purpose(&id)).await {
        Ok(view) => Ok(html_page(
            &nonce,
            render(
                &id,
                &mask(view.email.as_str()),
                &view.context,
                &view.page_hash,
                &nonce,
            ),
        )),
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

/// Emails a 6-digit code to the mandate's recipient (one a minute; none while locked after five
/// wrong codes). Counts against the caller's sending allowance (CONTRACT §9).
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`md_…`")),
    responses(
        (status = 202, description = "Code sent", body = Envelope<Empty>),
        (status = 404, description = "No such mandate for a hosted page", body = ErrorBody),
        (status = 409, description = "No longer awaiting authorisation", body = ErrorBody),
        (status = 429, description = "Sent less than a minute ago, locked, or too many sends; see Retry-After", body = ErrorBody)
    )
)]
#[post("/mandates/{id}/code")]
pub async fn send_code(
    hosted: web::Data<HostedApprovals>,
    send_limits: web::Data<SendLimits>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    steps::send_code(&hosted, &send_limits, &req, &purpose(&id)).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct HostedCodeBody {
    /// The 6 digits from the email.
    code: String,
}

/// Checks the emailed code; a right one returns the page token. Each guess takes one of five
/// attempts before it is compared; the fifth wrong one locks this address for 15 minutes.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`md_…`")),
    request_body = HostedCodeBody,
    responses(
        (status = 200, description = "The page token", body = Envelope<HostedPageToken>),
        (status = 401, description = "Wrong or expired code", body = ErrorBody),
        (status = 429, description = "Locked after five wrong codes; see Retry-After", body = ErrorBody)
    )
)]
#[post("/mandates/{id}/code/verify")]
pub async fn verify_code(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
    body: ApiJson<HostedCodeBody>,
) -> Result<HttpResponse, ApiError> {
    steps::verify_code(&hosted, &purpose(&id), &body.0.code).await
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct HostedTokenBody {
    token: String,
}

/// Options to make a passkey for this decision in the browser.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`md_…`")),
    request_body = HostedTokenBody,
    responses(
        (status = 200, description = "Creation options", body = Envelope<HostedCreationOptions>),
        (status = 401, description = "No live page token", body = ErrorBody)
    )
)]
#[post("/mandates/{id}/passkey/registration")]
pub async fn passkey_registration(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
    body: ApiJson<HostedTokenBody>,
) -> Result<HttpResponse, ApiError> {
    steps::passkey_registration(&hosted, &purpose(&id), &body.0.token).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedCredentialBody {
    token: String,
    /// The `PublicKeyCredential` (WebAuthn JSON).
    #[schema(value_type = Object)]
    credential: Value,
    /// The page's `data-context-hash`: the hash of the terms it shows.
    context_hash: String,
}

/// Keeps the new passkey and returns assertion options whose challenge commits to the mandate's
/// terms as they are now — only if the page showed those terms (`contextHash`), else 409 and
/// the page is to be reloaded.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`md_…`")),
    request_body = HostedCredentialBody,
    responses(
        (status = 200, description = "Assertion options", body = Envelope<HostedAssertionOptions>),
        (status = 401, description = "No live page token, or the passkey did not verify", body = ErrorBody),
        (status = 409, description = "The terms changed after the page was loaded (`contextHash`): reload it", body = ErrorBody)
    )
)]
#[post("/mandates/{id}/passkey/assertion")]
pub async fn passkey_assertion(
    hosted: web::Data<HostedApprovals>,
    id: web::Path<String>,
    body: ApiJson<HostedCredentialBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    steps::passkey_assertion(
        &hosted,
        &purpose(&id),
        &body.token,
        &body.credential,
        &body.context_hash,
    )
    .await
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedDecisionBody {
    token: String,
    /// `approve` or `reject`.
    decision: String,
    /// The assertion over the challenge of the previous step.
    #[schema(value_type = Object)]
    credential: Value,
    /// The page's `data-context-hash`: the hash of the terms it shows.
    context_hash: String,
}

/// Approves (`active`, `mandate.signed`) or declines (`cancelled`) with the passkey's
/// assertion; once per page token. 409 when the mandate changed since the page was loaded
/// (`contextHash`; the token is kept for the reloaded page) or since the challenge.
#[utoipa::path(
    tag = "hosted",
    params(("id" = String, Path, description = "`md_…`")),
    request_body = HostedDecisionBody,
    responses(
        (status = 200, description = "Decided", body = Envelope<HostedDecision>),
        (status = 401, description = "No live page token, or the assertion did not verify", body = ErrorBody),
        (status = 409, description = "No longer awaiting authorisation, or changed since the page was loaded or the challenge", body = ErrorBody),
        (status = 422, description = "Unknown decision", body = ErrorBody)
    )
)]
#[post("/mandates/{id}/decision")]
pub async fn decide(
    hosted: web::Data<HostedApprovals>,
    req: HttpRequest,
    id: web::Path<String>,
    body: ApiJson<HostedDecisionBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let step = DecisionStep {
        token: &body.token,
        decision: &body.decision,
        shown: &body.context_hash,
        assertion: Some(&body.credential),
        passkey_required: true,
    };
    steps::decide(&hosted, &req, &purpose(&id), step).await
}

/// `ann@example.com` → `a••@example.com`: the page names the address without spelling it out.
fn mask(email: &str) -> String {
    match email.split_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}••@{domain}")
        }
        None => "your address".to_owned(),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `up to 49.9 EUR, monthly` / `no maximum amount`.
fn terms(terms: &Value) -> String {
    let amount = match &terms["amount"] {
        Value::Null => "no maximum amount".to_owned(),
        amount => {
            // Major units as people write them: 120, 49.90.
            let amount = amount.as_f64().unwrap_or_default();
            let shown = if amount.fract() == 0.0 {
                format!("{amount:.0}")
            } else {
                format!("{amount:.2}")
            };
            format!("up to {shown} {}", text(&terms["currency"]))
        }
    };
    match &terms["frequency"] {
        Value::Null => amount,
        frequency => format!("{amount}, {}", text(frequency)),
    }
}

fn render_closed(status: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Mandate</title></head><body><main><h1>Nothing to decide</h1>\
         <p id=\"closed\">{}.</p></main></body></html>\n",
        escape(status)
    )
}

fn render(id: &str, email: &str, context: &Value, page_hash: &str, nonce: &str) -> String {
    let script = steps_script(nonce);
    let merchant = escape(&text(&context["merchant"]));
    let application = escape(&text(&context["application"]));
    let kind = escape(&text(&context["mandateType"]).replace('_', " "));
    let description = escape(&text(&context["description"]));
    let shown_terms = if context["previousTerms"].is_object() {
        format!(
            "<p>New terms: <strong id=\"terms\">{}</strong><br>Authorised so far: {}</p>",
            escape(&terms(&context["terms"])),
            escape(&terms(&context["previousTerms"]))
        )
    } else {
        format!(
            "<p>Terms: <strong id=\"terms\">{}</strong></p>",
            escape(&terms(&context["terms"]))
        )
    };
    let sandbox = if context["environment"] == "sandbox" {
        "<p class=\"note\">Sandbox: a test mandate, nothing is charged.</p>"
    } else {
        ""
    };
    let id = escape(id);
    let email = escape(email);
    let page_hash = escape(page_hash);
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>Authorise a mandate</title>
<style nonce="{nonce}">{STEPS_STYLE}</style>
</head>
<body>
<main id="steps" data-base="/mandates/{id}" data-context-hash="{page_hash}" data-passkey="required" data-approved="Mandate authorised." data-declined="Mandate declined.">
<p class="requester">{application} · {merchant}</p>
<h1>Authorise a {kind}</h1>
<p id="description">{description}</p>
{shown_terms}
{sandbox}
<section id="step-code">
<p>First, confirm it is you: we email a 6-digit code to {email}.</p>
<button id="send">Email me a code</button>
<p><label>Code <input id="code" inputmode="numeric" autocomplete="one-time-code" maxlength="6"></label>
<button id="verify">Confirm</button></p>
</section>
<section id="step-passkey" hidden>
<p>Then confirm with a passkey on this device (fingerprint, face or screen lock).</p>
<button id="passkey">Use a passkey</button>
</section>
<section id="step-decide" hidden>
<p>Do you authorise this mandate?</p>
<button id="approve">Authorise</button>
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
