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
/// fetches to this origin only, no framing of it; the only frame it may show is a document the
/// page itself fetched (a `blob:` URL: the signing page's PDF).
pub fn html_page(nonce: &str, html: String) -> HttpResponse {
    let policy = format!(
        "default-src 'none'; img-src 'self'; script-src 'nonce-{nonce}'; \
         style-src 'nonce-{nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'none'; frame-src blob:"
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

/// The steps every hosted approval page runs (emailed code, passkey, decision), driven by the
/// `#steps` element's data attributes: `data-base` (the page's path), `data-context-hash` (the
/// hash of what the page shows, sent with the passkey and decision steps: the server refuses
/// them with 409 when the object changed since, and the page offers `#reload`), `data-passkey`
/// (`required` or `none`), `data-approved` / `data-declined` (what to say after). A page with
/// an `#email` input sends the address with every step; one with a `#document` link gets the
/// document once the address is confirmed.
pub fn steps_script(nonce: &str) -> String {
    format!(
        r#"<script nonce="{nonce}">
(function () {{
  "use strict";
  var root = document.getElementById("steps");
  var base = root.getAttribute("data-base");
  var passkeyRequired = root.getAttribute("data-passkey") === "required";
  var shown = root.getAttribute("data-context-hash");
  var note = document.getElementById("status");
  var token = null, assertion = null;
  function $(id) {{ return document.getElementById(id); }}
  function say(text) {{ note.textContent = text; }}
  // A refusal; when what the page shows changed meanwhile, only a reload can go on.
  function fail(e) {{
    say(e.message || String(e));
    if (e.reload) {{
      $("step-passkey").hidden = true;
      $("step-decide").hidden = true;
      $("reload").hidden = false;
    }}
  }}
  $("reload").addEventListener("click", function () {{ window.location.reload(); }});
  // Pages where the visitor says who they are (a signer) send their address with every step.
  function who(body) {{
    var email = $("email");
    return Object.assign(email ? {{ email: email.value.trim() }} : {{}}, body || {{}});
  }}
  function post(path, body) {{
    return fetch(base + path, {{
      method: "POST", cache: "no-store", credentials: "omit",
      headers: {{ "Content-Type": "application/json", Accept: "application/json" }},
      body: JSON.stringify(who(body))
    }}).then(function (response) {{
      return response.json().then(function (json) {{
        if (!response.ok) {{
          var error = new Error(json.message || ("HTTP " + response.status));
          error.reload = response.status === 409 && (json.details || []).some(function (d) {{
            return d.field === "contextHash";
          }});
          throw error;
        }}
        return json.data || {{}};
      }});
    }});
  }}
  function fromB64(text) {{
    var b64 = text.replace(/-/g, "+").replace(/_/g, "/");
    while (b64.length % 4) {{ b64 += "="; }}
    return Uint8Array.from(atob(b64), function (c) {{ return c.charCodeAt(0); }}).buffer;
  }}
  function toB64(buffer) {{
    var bytes = new Uint8Array(buffer), text = "";
    for (var i = 0; i < bytes.length; i++) {{ text += String.fromCharCode(bytes[i]); }}
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }}
  function ids(list) {{
    return (list || []).map(function (c) {{ return Object.assign({{}}, c, {{ id: fromB64(c.id) }}); }});
  }}
  function credentialJson(credential) {{
    var r = credential.response, response = {{ clientDataJSON: toB64(r.clientDataJSON) }};
    if (r.attestationObject) {{ response.attestationObject = toB64(r.attestationObject); }}
    if (r.authenticatorData) {{
      response.authenticatorData = toB64(r.authenticatorData);
      response.signature = toB64(r.signature);
      if (r.userHandle) {{ response.userHandle = toB64(r.userHandle); }}
    }}
    return {{ id: credential.id, rawId: toB64(credential.rawId), type: credential.type,
             response: response, extensions: {{}} }};
  }}
  $("send").addEventListener("click", function () {{
    post("/code").then(function () {{ say("Code sent. Check your email."); }},
                       function (e) {{ say(e.message); }});
  }});
  $("verify").addEventListener("click", function () {{
    post("/code/verify", {{ code: $("code").value }}).then(function (data) {{
      token = data.token;
      $("step-code").hidden = true;
      $(passkeyRequired ? "step-passkey" : "step-decide").hidden = false;
      say("Address confirmed.");
      if ($("document")) {{ showDocument(); }}
    }}, function (e) {{ say(e.message); }});
  }});
  $("passkey").addEventListener("click", function () {{
    post("/passkey/registration", {{ token: token }}).then(function (data) {{
      var options = data.publicKey;
      options.challenge = fromB64(options.challenge);
      options.user = Object.assign({{}}, options.user, {{ id: fromB64(options.user.id) }});
      options.excludeCredentials = ids(options.excludeCredentials);
      return navigator.credentials.create({{ publicKey: options }});
    }}).then(function (created) {{
      return post("/passkey/assertion",
                  {{ token: token, credential: credentialJson(created), contextHash: shown }});
    }}).then(function (data) {{
      var options = data.publicKey;
      options.challenge = fromB64(options.challenge);
      options.allowCredentials = ids(options.allowCredentials);
      return navigator.credentials.get({{ publicKey: options }});
    }}).then(function (asserted) {{
      assertion = credentialJson(asserted);
      $("step-passkey").hidden = true;
      $("step-decide").hidden = false;
      say("Passkey confirmed.");
    }}).catch(fail);
  }});
  // The document is shown only to a confirmed signer: fetched with the token.
  function showDocument() {{
    fetch(base + "/document", {{
      method: "POST", cache: "no-store", credentials: "omit",
      headers: {{ "Content-Type": "application/json" }},
      body: JSON.stringify(who({{ token: token }}))
    }}).then(function (response) {{
      if (response.ok) {{ return response.blob(); }}
      // The envelope's message says why (a document no longer stored: 410).
      return response.json().then(function (json) {{
        throw new Error(json.message || ("HTTP " + response.status));
      }}, function () {{ throw new Error("HTTP " + response.status); }});
    }}).then(function (pdf) {{
      var url = URL.createObjectURL(pdf), link = $("document"), viewer = $("viewer");
      link.href = url;
      link.hidden = false;
      // The browser's own PDF viewer shows the pages; nothing from a third party.
      if (viewer) {{ viewer.src = url; viewer.hidden = false; }}
    }}).catch(function (e) {{ say(e.message); }});
  }}
  function decide(decision) {{
    post("/decision", {{ token: token, decision: decision, credential: assertion,
                         contextHash: shown }}).then(function (data) {{
      $("step-decide").hidden = true;
      say(decision === "approve" ? root.getAttribute("data-approved")
                                 : root.getAttribute("data-declined"));
    }}, fail);
  }}
  $("approve").addEventListener("click", function () {{ decide("approve"); }});
  $("reject").addEventListener("click", function () {{ decide("reject"); }});
}})();
</script>"#
    )
}

/// Styles of the pages that use [`steps_script`].
pub const STEPS_STYLE: &str = "\
body{margin:0;font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",sans-serif;background:#f4f5f7;color:#1d2330}\
main{max-width:28rem;margin:2rem auto;padding:1.5rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.12)}\
h1{margin:.2rem 0 1rem;font-size:1.3rem;overflow-wrap:anywhere}\
.requester,.note{color:#5a6272;font-size:.9rem}\
section{margin-top:1rem}\
input{font:inherit;padding:.4rem;max-width:100%}\
#code{width:8rem;letter-spacing:.2rem}\
button{font:inherit;padding:.5rem 1rem;margin:.2rem .2rem .2rem 0;border-radius:8px;border:1px solid #2457c5;background:#2457c5;color:#fff}\
button.secondary{background:#fff;color:#2457c5}\
#status{font-weight:600}";
