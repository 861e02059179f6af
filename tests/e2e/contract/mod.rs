//! The API contract, pinned. Every JSON route's response body is checked against the schema
//! `/openapi.json` documents for its status and against a reviewed snapshot; every webhook event
//! body against its snapshot; the document itself against its snapshot. Snapshots live in
//! `contract/snapshots/` with ids, times, secrets and random test data redacted
//! (`redact.rs`). A changed body, event or document fails here until its snapshot is reviewed
//! and accepted (docs/api-design.md, "Contract snapshots").
//!
//! Pinning a new route is one line in the walk of its area:
//! `contract.response("POST /v1/things", "", response).await;` — the route as `/openapi.json`
//! names it. The walk ends by checking that every documented JSON route was pinned.

mod billing;
mod consents;
mod endusers;
mod identity;
mod mandates;
mod merchants;
mod oauth;
mod oidc;
mod qr;
mod redact;
mod schema;
mod signatures;

use std::collections::BTreeSet;

use idconsent_e2e::receiver::Received;
use idconsent_e2e::{Backend, TestApp, json, on_both_backends};
use reqwest::Response;
use serde_json::Value;

on_both_backends!(the_api_contract_holds);

/// Response schemas that are open on purpose, and why. Everything else a response can carry
/// has a concrete schema (`every_response_schema_is_concrete`). Places are named as
/// `schema::untyped_objects` reports them: `Component.field`, an envelope's `data` inlined
/// into `Envelope_<Dto>`.
const OPEN_SCHEMAS: [(&str, &str); 13] = [
    (
        "GET /openapi.json 200",
        "the OpenAPI 3.1 document itself, whose schema is the OpenAPI specification's",
    ),
    (
        "Envelope_RegistrationOptions.data.publicKey",
        "W3C WebAuthn creation options, made by the WebAuthn library and handed unchanged to \
         the authenticator",
    ),
    (
        "Envelope_AssertionOptions.data.publicKey",
        "W3C WebAuthn request options, made by the WebAuthn library and handed unchanged to \
         the authenticator",
    ),
    (
        "Envelope_AssertionOptions.data.context",
        "what the app shows before a passkey approval: its fields depend on the purpose (each \
         approvable domain describes its objects), and the app hashes it exactly as sent",
    ),
    (
        "Envelope_HostedCreationOptions.data.publicKey",
        "W3C WebAuthn creation options for the browser on a hosted page (mandate, signing), \
         made by the WebAuthn library and handed unchanged to navigator.credentials.create",
    ),
    (
        "Envelope_HostedAssertionOptions.data.publicKey",
        "W3C WebAuthn request options for the browser on a hosted page, made by the WebAuthn \
         library and handed unchanged to navigator.credentials.get",
    ),
    (
        "Envelope_HostedAssertionOptions.data.context",
        "what the hosted page decides: its fields depend on the purpose (each approvable \
         domain describes its objects), committed to exactly as sent",
    ),
    (
        "ClaimBody.value",
        "a claim's verified value: a string for every claim today, an object for `address` \
         once identity verification provides it",
    ),
    (
        "Envelope_ClientView.data.jwks",
        "an OpenID Connect client's public keys as it registered them: an RFC 7517 key set, \
         whose members depend on each key's type",
    ),
    (
        "GET /.well-known/openid-configuration 200",
        "OpenID Connect Discovery metadata: the standard's open document, which names each \
         feature only once it is served (docs/oidc.md)",
    ),
    (
        "GET /oauth2/userinfo 200",
        "OpenID Connect userinfo: `sub` and the standard claims the token's scopes approved, \
         which differ per token (docs/oidc.md, claim mapping)",
    ),
    (
        "POST /oauth2/userinfo 200",
        "OpenID Connect userinfo by POST: the same open claims set as GET",
    ),
    (
        "POST /oauth2/introspect 200",
        "RFC 7662 introspection: `{active: false}` alone, or the members of an active access \
         or refresh token",
    ),
];

/// Every JSON response `/openapi.json` documents has a concrete schema down to its last field,
/// except the open ones listed in [`OPEN_SCHEMAS`] (and that list holds nothing stale).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_schema_is_concrete() {
    let app = TestApp::start(Backend::Sqlite)
        .await
        .expect("SQLite always runs");
    let openapi = json(app.get("/openapi.json").await, 200).await;
    app.stop().await;
    let untyped = schema::untyped_objects(&openapi);
    let open: BTreeSet<String> = OPEN_SCHEMAS
        .iter()
        .map(|(place, _)| (*place).to_owned())
        .collect();
    let unexplained: Vec<&String> = untyped.difference(&open).collect();
    assert!(
        unexplained.is_empty(),
        "response schemas without a concrete shape (give the body a typed DTO, or list it in \
         OPEN_SCHEMAS with the reason it is open): {unexplained:#?}"
    );
    let stale: Vec<&String> = open.difference(&untyped).collect();
    assert!(
        stale.is_empty(),
        "OPEN_SCHEMAS entries that are typed now: {stale:#?}"
    );
}

/// What the walks have pinned so far, and the document they are checked against.
pub struct Contract {
    openapi: Value,
    pinned: BTreeSet<String>,
}

impl Contract {
    /// The contract of this server: its `/openapi.json`, pinned by the first snapshot.
    pub async fn of(app: &TestApp) -> Self {
        let openapi = json(app.get("/openapi.json").await, 200).await;
        snapshot("openapi", "GET /openapi.json → 200, verbatim", &openapi);
        Self {
            openapi,
            pinned: BTreeSet::from(["GET /openapi.json".to_owned()]),
        }
    }

    /// Checks a response of `route` (`"METHOD /path"` as documented): its status is documented,
    /// its body matches the documented schema for that status and the snapshot named after the
    /// route, the status and `variant` (to tell several snapshots of one route apart). Returns
    /// the body.
    pub async fn response(&mut self, route: &str, variant: &str, response: Response) -> Value {
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{route} answered {status} with no JSON: {text}"));
        self.body(route, status, variant, &body);
        body
    }

    /// [`Contract::response`] for a body already read.
    pub fn body(&mut self, route: &str, status: u16, variant: &str, body: &Value) {
        let (method, path) = route
            .split_once(' ')
            .unwrap_or_else(|| panic!("a route is `METHOD /path`, not {route:?}"));
        let documented =
            &self.openapi["paths"][path][method.to_lowercase()]["responses"][status.to_string()];
        assert!(
            documented.is_object(),
            "{route} answered {status}, which /openapi.json does not document; body: {body}"
        );
        let schema = &documented["content"]["application/json"]["schema"];
        assert!(
            schema.is_object(),
            "{route} {status}: /openapi.json documents no JSON body; body: {body}"
        );
        let mismatches = schema::mismatches(&self.openapi, schema, body);
        assert!(
            mismatches.is_empty(),
            "{route} {status}: the body does not match its documented schema:\n  {}\nbody: {body:#}",
            mismatches.join("\n  ")
        );
        if (200..300).contains(&status) {
            self.pinned.insert(route.to_owned());
        }
        let name = format!("{}__{status}{}", slug(route), suffix(variant));
        let description = format!("{route} → {status} {variant}");
        snapshot(&name, description.trim_end(), &redact::redacted(body));
    }

    /// Checks a webhook as delivered against the snapshot of its event type and `variant`.
    pub fn event(&mut self, variant: &str, received: &Received) -> Value {
        let body = received.json();
        self.event_body(variant, &body);
        body
    }

    /// Like [`Contract::event`], for an event body the walk has adjusted.
    pub fn event_body(&mut self, variant: &str, body: &Value) {
        let event_type = body["type"].as_str().unwrap_or_default();
        let name = format!("event__{}{}", slug(event_type), suffix(variant));
        snapshot(
            &name,
            format!("webhook {event_type} {variant}").trim_end(),
            &redact::redacted(body),
        );
    }

    /// Every route `/openapi.json` documents with a JSON success body has been pinned.
    fn assert_every_json_route_pinned(&self) {
        let mut documented = BTreeSet::new();
        for (path, item) in self.openapi["paths"].as_object().into_iter().flatten() {
            for (method, operation) in item.as_object().into_iter().flatten() {
                let json_success = operation["responses"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .any(|(status, response)| {
                        status.starts_with('2')
                            && response["content"].get("application/json").is_some()
                    });
                if json_success {
                    documented.insert(format!("{} {path}", method.to_uppercase()));
                }
            }
        }
        let unpinned: Vec<&String> = documented.difference(&self.pinned).collect();
        assert!(
            unpinned.is_empty(),
            "documented JSON routes without a contract snapshot (add a `contract.response` line \
             to a walk in tests/e2e/contract): {unpinned:#?}"
        );
    }
}

fn suffix(variant: &str) -> String {
    if variant.is_empty() {
        String::new()
    } else {
        format!("__{}", slug(variant))
    }
}

/// `POST /v1/consents/auth/{sessionId}` → `post_v1_consents_auth_sessionid`.
fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}

fn snapshot(name: &str, description: &str, value: &Value) {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(description);
    settings.bind(|| insta::assert_json_snapshot!(name, value));
}

/// One walk through every area of the API, on a fresh service, pinning each body on the way.
async fn the_api_contract_holds(app: TestApp) {
    let mut contract = Contract::of(&app).await;
    merchants::walk(&app, &mut contract).await;
    consents::walk(&app, &mut contract).await;
    endusers::walk(&app, &mut contract).await;
    oauth::walk(&app, &mut contract).await;
    qr::walk(&app, &mut contract).await;
    oidc::walk(&app, &mut contract).await;
    signatures::walk(&app, &mut contract).await;
    mandates::walk(&app, &mut contract).await;
    identity::walk(&app, &mut contract).await;
    billing::walk(&app, &mut contract).await;
    contract.assert_every_json_route_pinned();
    app.stop().await;
}
