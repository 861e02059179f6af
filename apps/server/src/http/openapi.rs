//! The OpenAPI 3.1 document, generated from the handlers' annotations, and what is derived from
//! it: the rendered reference at `/docs` and the route table that tells 404 from 405.

use actix_web::App;
use actix_web::dev::ResourceDef;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_actix_web::AppExt;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::{ErrorBody, FieldErrorBody};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "idconsent API",
        description = "Identity consent and verification: consent sessions approved with passkeys, \
                       OAuth with PKCE and verified claims, merchant onboarding, and signed webhooks. \
                       Errors use one envelope: `{code, error: true, type, message, details?}`.",
        license(name = "Apache-2.0"),
    ),
    components(schemas(ErrorBody, FieldErrorBody)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "system", description = "Health, readiness, metrics and this document"),
        (name = "merchants", description = "Merchant registration, verification, profile, documents and go-live (merchant JWT)"),
        (name = "team", description = "Team members and invitations (merchant JWT)"),
        (name = "applications", description = "Applications and their API credentials (merchant JWT)"),
        (name = "admin", description = "The platform operator's review (operator token)"),
        (name = "consents", description = "Consent sessions and their QR codes (signed API-key requests)"),
        (name = "mandates", description = "Digital mandates a recipient authorises with a passkey (signed API-key requests)"),
        (name = "hosted", description = "Hosted approval pages for email recipients: emailed code, browser passkey, decision (no API key)"),
        (name = "signatures", description = "Signature requests: PDFs signed by 1 to 20 signers, and their certificates (signed API-key requests)"),
        (name = "identity", description = "Identity verification of a document and a selfie, and liveness of an image (signed API-key requests)"),
        (name = "billing", description = "Usage against the plan's quotas, and invoices (signed API-key requests, or merchant JWT for owners and admins)"),
        (name = "sandbox", description = "Act as the user in sandbox (mk_test_ keys only)"),
        (name = "webhooks", description = "Signed webhook deliveries (signed API-key requests)"),
        (name = "notifications", description = "Outgoing SMS and email"),
        (name = "enrollments", description = "End-user enrollment: phone code, passkey, verification (the mobile app)"),
        (name = "fido", description = "FIDO2/WebAuthn registration and purpose-bound authentication (the mobile app)"),
        (name = "devices", description = "The signed-in user's devices (app access token + X-Device-ID)"),
        (name = "app-auth", description = "App sign-in and token refresh (/v6/auth)"),
        (name = "oauth", description = "OAuth with PKCE: access requests, token exchange, JWKS, userinfo, introspection, revocation"),
        (name = "oidc", description = "OpenID Connect: discovery, the standard /oauth2 endpoints and the per-application client configuration (docs/oidc.md)"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "operatorToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The platform operator's IDC_ADMIN_TOKEN."))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "merchantJwt",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "A merchant session token from register, login or accepting an invitation (1 hour).",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "oauthAccessToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "An access token from POST /v1/oauth/token (ES256, verify with /.well-known/jwks.json).",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "appToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "An app access token from /v6/auth/login or /v6/auth/refresh (15 minutes), \
                         sent with the X-Device-ID it was issued for.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "signedRequest",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "The application's API key, with X-Timestamp (milliseconds since the epoch) and \
                 X-Signature: lowercase hex HMAC-SHA256, keyed by the application secret, of \
                 `apiKey:timestamp:rawBody` (rawBody empty when there is no body).",
            ))),
        );
    }
}

/// The plan rate-limit headers (ADR 0029) on every signed operation's 2xx and 4xx responses, and
/// `Retry-After` on its 429: the gate adds them to every route, so the document says so once
/// here rather than on forty handlers.
fn document_rate_limit_headers(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::header::Header;
    use utoipa::openapi::{Content, Object, Ref, RefOr, ResponseBuilder, Type};

    let integer = |description: &str| {
        let mut header = Header::new(Object::with_type(Type::Integer));
        header.description = Some(description.to_owned());
        RefOr::T(header)
    };
    for item in document.paths.paths.values_mut() {
        let operations = [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ];
        for operation in operations.into_iter().flatten() {
            let signed = operation.security.iter().flatten().any(|requirement| {
                serde_json::to_value(requirement)
                    .is_ok_and(|value| value.get("signedRequest").is_some())
            });
            if !signed {
                continue;
            }
            // Every signed route can be refused by the plan's limits.
            operation
                .responses
                .responses
                .entry("429".into())
                .or_insert_with(|| {
                    RefOr::T(
                        ResponseBuilder::new()
                            .description("Over the plan's rate limit, or a monthly quota used up")
                            .content(
                                "application/json",
                                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
                            )
                            .build(),
                    )
                });
            for (status, response) in &mut operation.responses.responses {
                let RefOr::T(response) = response else {
                    continue;
                };
                // 401s come before the key is known: no plan, no headers.
                if !(status.starts_with('2') || status.starts_with('4')) || status == "401" {
                    continue;
                }
                let headers = &mut response.headers;
                headers.insert(
                    "RateLimit-Limit".into(),
                    integer("The merchant's limit in the tightest window (per minute, per day or in flight)"),
                );
                headers.insert(
                    "RateLimit-Remaining".into(),
                    integer("Requests left in that window"),
                );
                headers.insert(
                    "RateLimit-Reset".into(),
                    integer("Seconds until that window is whole again"),
                );
                if status == "429" {
                    headers.insert(
                        "Retry-After".into(),
                        integer("Seconds to wait before retrying"),
                    );
                }
            }
        }
    }
}

/// The API document and what is derived from it, built once at start.
#[derive(Debug)]
pub struct ApiDocs {
    pub json: String,
    pub html: String,
    routes: Vec<(ResourceDef, Vec<&'static str>)>,
}

impl ApiDocs {
    /// The document of the routes `routes` declares (the server passes `http::routes`, so a
    /// route cannot be served without being documented).
    pub fn build(routes: impl FnOnce(&mut ServiceConfig)) -> Self {
        let (_, mut document) = App::new()
            .into_utoipa_app()
            .openapi(ApiDoc::openapi())
            .configure(routes)
            .split_for_parts();
        document_rate_limit_headers(&mut document);
        let routes = document
            .paths
            .paths
            .iter()
            .map(|(path, item)| {
                let methods = [
                    ("GET", item.get.is_some()),
                    ("POST", item.post.is_some()),
                    ("PUT", item.put.is_some()),
                    ("PATCH", item.patch.is_some()),
                    ("DELETE", item.delete.is_some()),
                ]
                .into_iter()
                .filter_map(|(method, present)| present.then_some(method))
                .collect();
                (ResourceDef::new(path.as_str()), methods)
            })
            .collect();
        let value = serde_json::to_value(&document).unwrap_or_default();
        Self {
            json: serde_json::to_string_pretty(&value).unwrap_or_default(),
            html: super::reference::render(&value),
            routes,
        }
    }

    /// Methods served at `path`; empty when no route matches it at all.
    pub fn allowed_methods(&self, path: &str) -> Vec<&'static str> {
        let mut methods: Vec<&'static str> = self
            .routes
            .iter()
            .filter(|(pattern, _)| pattern.is_match(path))
            .flat_map(|(_, methods)| methods.iter().copied())
            .collect();
        methods.sort_unstable();
        methods.dedup();
        methods
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    /// Every `ToSchema` type under `src/http`: its component name and where it is declared.
    fn schema_types(dir: &Path, found: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|entry| entry.path());
        for entry in entries {
            let path = entry.path();
            if path.is_dir() {
                schema_types(&path, found);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut deriving = false;
            let mut renamed: Option<String> = None;
            for line in text.lines().map(str::trim) {
                if line.starts_with("#[derive(") && line.contains("ToSchema") {
                    deriving = true;
                } else if deriving && line.starts_with("#[schema(as = ") {
                    renamed = line
                        .trim_start_matches("#[schema(as = ")
                        .split([')', ','])
                        .next()
                        .map(str::to_owned);
                } else if let Some(name) = line.strip_prefix("impl ToSchema for ") {
                    found.push((
                        name.trim_end_matches(" {").to_owned(),
                        path.display().to_string(),
                    ));
                } else if deriving
                    && let Some(rest) = line
                        .strip_prefix("pub ")
                        .unwrap_or(line)
                        .strip_prefix("struct ")
                        .or_else(|| {
                            line.strip_prefix("pub enum ")
                                .or(line.strip_prefix("enum "))
                        })
                {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    found.push((renamed.take().unwrap_or(name), path.display().to_string()));
                    deriving = false;
                }
            }
        }
    }

    /// utoipa names a component after its Rust type, and a second type of the same name
    /// silently replaces the first in `/openapi.json` (a request body documented as a response
    /// body, or the reverse). Every documented type under `src/http` has a name of its own.
    #[test]
    fn every_schema_has_a_name_of_its_own() {
        let mut found = Vec::new();
        schema_types(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http"),
            &mut found,
        );
        assert!(found.len() > 50, "the scan found only {found:?}");
        let mut places: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (name, file) in &found {
            places.entry(name).or_default().push(file);
        }
        let clashes: Vec<_> = places.iter().filter(|(_, files)| files.len() > 1).collect();
        assert!(
            clashes.is_empty(),
            "schema names declared more than once (rename one, or `#[schema(as = …)]`): {clashes:#?}"
        );
    }
}
