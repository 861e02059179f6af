//! The hosted authorization page (CONTRACT §5): `GET /oauth/authorize/{sessionId}` shows the
//! merchant's request and its QR code, waits for the user's decision by polling
//! `GET /oauth/authorize/{sessionId}/status`, then sends the browser to the redirect URI:
//! `?code=…&state=…` once approved, `?error=access_denied&state=…` once rejected or expired.
//!
//! No authentication: the session id carries at least 128 bits of randomness, and the page
//! shows nothing the merchant did not write (application, description, claim names). The code
//! appears only while it is unconsumed (PKCE protects it in the redirect); an approved request
//! whose code is spent or expired redirects with `state` alone, so a merchant that already
//! exchanged the code from the webhook never receives a spent code (reusing one revokes the
//! token issued from it).

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, get, web};
use idconsent_oauth::{HostedPage, OAuthService};
use serde::Serialize;
use utoipa::ToSchema;

use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::hosted::page::{HARDENING, escape, hardened, html_page, unavailable_page};
use crate::wiring::PageNonces;

/// Milliseconds between two polls of the status endpoint by the page.
const POLL_MILLIS: u32 = 1000;

/// What the page polls.
#[derive(Debug, Serialize, ToSchema)]
pub struct HostedStatus {
    /// `pending`, `approved`, `rejected` or `expired`.
    status: &'static str,
    /// Where to send the browser, once the request is decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    redirect: Option<String>,
}

/// The hosted authorization page: the request's QR code, a wait for the decision, then a
/// redirect to `redirectUri?code=…&state=…` (approved) or `redirectUri?error=access_denied&state=…`
/// (rejected or expired). A request that is already decided redirects at once (303). No
/// authentication: the session id is unguessable.
#[utoipa::path(
    tag = "oauth",
    params(("sessionId" = String, Path, description = "`cs_…` of an OAuth request")),
    responses(
        (status = 200, description = "The page (HTML, strict Content-Security-Policy)", content_type = "text/html", body = String),
        (status = 303, description = "Already decided: Location is the redirect URI with `code` and `state`, or `error=access_denied` and `state`"),
        (status = 404, description = "No such OAuth request", body = ErrorBody)
    )
)]
#[get("/oauth/authorize/{sessionId}")]
pub async fn page(
    oauth: web::Data<OAuthService>,
    nonces: web::Data<PageNonces>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let HostedPage {
        view,
        names,
        deep_link,
    } = match oauth.hosted_page(&path.into_inner()).await {
        Ok(page) => page,
        // A person is reading this page: the outage as a page, not as JSON.
        Err(error) => {
            let error = ApiError::from(error);
            if error.is_unavailable() {
                return Ok(unavailable_page());
            }
            return Err(error);
        }
    };
    if let Some(location) = view.redirect(oauth.issuer()) {
        return Ok(hardened(HttpResponse::SeeOther())
            .insert_header((header::LOCATION, location))
            .finish());
    }
    // A fresh nonce per response for the Content-Security-Policy.
    let nonce = nonces.next();
    let html = render(&Page {
        session_id: view.session.id.as_str(),
        application: names.as_ref().map(|n| n.application.as_str()),
        merchant: names.as_ref().map(|n| n.merchant.as_str()),
        description: view
            .request
            .description
            .as_deref()
            .unwrap_or(view.session.transaction.description.as_str()),
        claims: view.request.claims.iter().map(|c| c.as_str()).collect(),
        deep_link: &deep_link,
        nonce: &nonce,
    });
    Ok(html_page(&nonce, html))
}

/// What the hosted page polls: `status` (lower case) and, once decided, `redirect`.
#[utoipa::path(
    tag = "oauth",
    params(("sessionId" = String, Path, description = "`cs_…` of an OAuth request")),
    responses(
        (status = 200, description = "The decision so far; `redirect` once decided", body = Envelope<HostedStatus>),
        (status = 404, description = "No such OAuth request", body = ErrorBody)
    )
)]
#[get("/oauth/authorize/{sessionId}/status")]
pub async fn status(
    oauth: web::Data<OAuthService>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let view = oauth.hosted_view(&path.into_inner()).await?;
    let mut response = respond(
        StatusCode::OK,
        "ok",
        HostedStatus {
            status: view.session.status_at(view.now).as_str(),
            redirect: view.redirect(oauth.issuer()),
        },
    );
    let headers = response.headers_mut();
    for (name, value) in HARDENING {
        headers.insert(name, HeaderValue::from_static(value));
    }
    Ok(response)
}

struct Page<'a> {
    session_id: &'a str,
    application: Option<&'a str>,
    merchant: Option<&'a str>,
    description: &'a str,
    claims: Vec<&'a str>,
    deep_link: &'a str,
    nonce: &'a str,
}

fn render(text: &Page<'_>) -> String {
    let requester = match (text.application, text.merchant) {
        (Some(application), Some(merchant)) if application != merchant => {
            format!("{} · {}", escape(application), escape(merchant))
        }
        (Some(name), _) | (None, Some(name)) => escape(name),
        (None, None) => "An application".to_owned(),
    };
    let shares = if text.claims.is_empty() {
        String::new()
    } else {
        let names: Vec<String> = text
            .claims
            .iter()
            .map(|claim| escape(&claim.replace('_', " ")))
            .collect();
        format!(
            "<p class=\"shares\">It asks for your verified {}.</p>",
            names.join(", ")
        )
    };
    let id = escape(text.session_id);
    let nonce = text.nonce;
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>Approve with idconsent</title>
<noscript><meta http-equiv="refresh" content="5"></noscript>
<style nonce="{nonce}">
body{{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1d2330}}
main{{max-width:26rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.12);text-align:center}}
.requester{{margin:0;color:#5a6272;font-size:.9rem}}
h1{{margin:.4rem 0 1rem;font-size:1.3rem;overflow-wrap:anywhere}}
img{{display:block;margin:1rem auto;width:240px;height:240px}}
.shares{{color:#5a6272;font-size:.9rem}}
#status{{font-weight:600}}
a{{color:#2457c5}}
</style>
</head>
<body>
<main id="authorize" data-status-url="/oauth/authorize/{id}/status" data-poll-ms="{POLL_MILLIS}">
<p class="requester">{requester}</p>
<h1>{description}</h1>
<p>Scan this code with the idconsent app to approve or decline.</p>
<img id="qr" src="/v1/consents/qr/svg/{id}" width="240" height="240" alt="QR code of this request for the idconsent app">
<p><a href="{deep_link}">Open in the idconsent app on this device</a></p>
{shares}
<p id="status" role="status" aria-live="polite">Waiting for your decision…</p>
</main>
<script nonce="{nonce}">
(function () {{
  "use strict";
  var root = document.getElementById("authorize");
  var url = root.getAttribute("data-status-url");
  var every = Number(root.getAttribute("data-poll-ms")) || 1000;
  var note = document.getElementById("status");
  var said = {{
    approved: "Approved. Taking you back…",
    rejected: "Declined. Taking you back…",
    expired: "This request has expired. Taking you back…"
  }};
  function later(ms) {{ window.setTimeout(poll, ms); }}
  function poll() {{
    fetch(url, {{ cache: "no-store", credentials: "omit", headers: {{ Accept: "application/json" }} }})
      .then(function (response) {{
        if (response.status === 404) {{
          note.textContent = "This request does not exist any more.";
          return null;
        }}
        return response.ok ? response.json() : Promise.reject(response.status);
      }})
      .then(function (body) {{
        if (!body) {{ return; }}
        var data = body.data || {{}};
        if (data.status === "pending" || !data.redirect) {{ later(every); return; }}
        document.getElementById("qr").hidden = true;
        note.textContent = said[data.status] || "Done. Taking you back…";
        window.location.replace(data.redirect);
      }})
      .catch(function () {{ later(every * 3); }});
  }}
  later(every);
}})();
</script>
</body>
</html>
"#,
        description = escape(text.description),
        deep_link = escape(text.deep_link),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merchant_text_is_escaped() {
        let html = render(&Page {
            session_id: "cs_abc",
            application: Some("<script>alert(1)</script>"),
            merchant: Some("A & B"),
            description: "\"quoted\" 'text'",
            claims: vec!["phone_number"],
            deep_link: "idconsent://auth/cs_abc",
            nonce: "n0nce",
        });
        assert!(!html.contains("<script>alert"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; · A &amp; B"));
        assert!(html.contains("&quot;quoted&quot; &#39;text&#39;"));
        assert!(html.contains("verified phone number."));
        assert!(html.contains("<script nonce=\"n0nce\">"));
        assert!(html.contains("src=\"/v1/consents/qr/svg/cs_abc\""));
    }
}
