//! What every hosted page (OAuth authorization, mandate approval) shares: hardening headers,
//! HTML escaping, and the page shown while the database is away.

use actix_web::http::header::{self, HeaderName};
use actix_web::{HttpResponse, HttpResponseBuilder};

/// Headers of every answer of a hosted page: nothing cached, no referrer leaves the page (its
/// URL is the capability), no sniffing.
pub const HARDENING: [(HeaderName, &str); 3] = [
    (header::CACHE_CONTROL, "no-store"),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
];

pub fn hardened(mut builder: HttpResponseBuilder) -> HttpResponseBuilder {
    for header in HARDENING {
        builder.insert_header(header);
    }
    builder
}

/// An HTML page with a strict Content-Security-Policy: scripts and styles only with `nonce`,
/// fetches to this origin only, no framing.
pub fn html_page(nonce: &str, html: String) -> HttpResponse {
    let policy = format!(
        "default-src 'none'; img-src 'self'; script-src 'nonce-{nonce}'; \
         style-src 'nonce-{nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'"
    );
    hardened(HttpResponse::Ok())
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, policy))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .body(html)
}

/// A hosted page while the database is away: 503, `Retry-After`, and a page that says so and
/// reloads itself.
pub fn unavailable_page() -> HttpResponse {
    hardened(HttpResponse::ServiceUnavailable())
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::RETRY_AFTER,
            crate::http::error::DATABASE_RETRY_AFTER_SECS.to_string(),
        ))
        .insert_header((header::CONTENT_SECURITY_POLICY, "default-src 'none'"))
        .body(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta http-equiv=\"refresh\" content=\"5\">\
             <title>Temporarily unavailable</title></head><body>\
             <h1>Temporarily unavailable</h1>\
             <p>The service is temporarily unavailable. This page tries again in a few \
             seconds.</p></body></html>\n",
        )
}

/// Text for HTML content and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}
