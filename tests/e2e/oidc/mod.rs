//! OpenID Connect (issue 34) over real HTTP on both backends: the client configuration, the
//! discovery document, and the authorization code flow's refusals. The flow driven by real
//! client libraries is in `oidc_clients.rs`.

use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::{TestApp, error, json};
use reqwest::{Method, Url};
use serde_json::{Value, json};

/// Runs each test on SQLite and PostgreSQL with the service's base URL (the issuer) set to the
/// address it really listens on, as a deployment's is: a client library follows the discovery
/// document's endpoints.
#[macro_export]
macro_rules! oidc_on_both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = $crate::oidc::start(idconsent_e2e::Backend::Sqlite).await {
                        super::$name(app).await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = $crate::oidc::start(idconsent_e2e::Backend::Postgres).await {
                        super::$name(app).await;
                    }
                }
            }
        )*
    };
}

mod support;

pub use support::*;

oidc_on_both_backends!(
    the_discovery_document_names_the_issuer_and_what_is_served,
    a_client_secret_is_shown_once_and_rotation_replaces_it,
    client_configuration_is_the_merchants_own_and_checked,
    a_wrong_redirect_uri_shows_an_error_page_and_never_redirects,
    request_errors_go_back_to_the_client_with_state_and_iss,
    a_reused_code_is_refused_and_revokes_the_token_it_gave,
    a_rotated_secret_no_longer_authenticates,
    without_login_hint_a_page_asks_for_the_phone,
    a_live_client_uses_https_and_asks_only_enrolled_phones,
);

async fn the_discovery_document_names_the_issuer_and_what_is_served(app: TestApp) {
    let response = app.get("/.well-known/openid-configuration").await;
    assert_eq!(response.status(), 200);
    let metadata: Value = response.json().await.unwrap();
    let issuer = app.url("");
    let issuer = issuer.trim_end_matches('/');
    assert_eq!(metadata["issuer"], issuer);
    for (field, path) in [
        ("authorization_endpoint", "/oauth2/authorize"),
        ("token_endpoint", "/oauth2/token"),
        ("userinfo_endpoint", "/oauth2/userinfo"),
        ("jwks_uri", "/.well-known/jwks.json"),
    ] {
        assert_eq!(metadata[field], format!("{issuer}{path}"), "{field}");
    }
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(
        metadata["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
    assert_eq!(metadata["subject_types_supported"], json!(["pairwise"]));
    assert_eq!(
        metadata["authorization_response_iss_parameter_supported"],
        true
    );
    assert_eq!(
        metadata["backchannel_token_delivery_modes_supported"],
        json!(["poll"])
    );
    // Only what works: no PAR or DPoP until they are served.
    for absent in [
        "pushed_authorization_request_endpoint",
        "dpop_signing_alg_values_supported",
    ] {
        assert!(metadata.get(absent).is_none(), "{absent}");
    }
}

async fn a_client_secret_is_shown_once_and_rotation_replaces_it(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    assert!(client.secret.starts_with("ocs_") && client.secret.len() == 68);
    assert_eq!(client.client_id, client.application.id);
    let path = format!("/v1/merchants/applications/{}/oidc", client.application.id);
    let read = json(
        app.as_merchant(Method::GET, &path, &client.merchant.token)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["data"]["redirectUris"], json!([REDIRECT]));
    assert_eq!(
        read["data"]["tokenEndpointAuthMethod"],
        "client_secret_basic"
    );
    assert!(read["data"].get("clientSecret").is_none());
    let again = json(
        configure(
            &app,
            &client.merchant,
            &client.application.id,
            &json!({"redirectUris": [REDIRECT, "https://shop.example/cb"], "tokenEndpointAuthMethod": "client_secret_post"}),
        )
        .await,
        200,
    )
    .await;
    assert!(again["data"].get("clientSecret").is_none());
    assert_eq!(
        again["data"]["tokenEndpointAuthMethod"],
        "client_secret_post"
    );
    let rotated = json(
        app.as_merchant(
            Method::POST,
            &format!("{path}/rotate-secret"),
            &client.merchant.token,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    let new = rotated["data"]["clientSecret"].as_str().unwrap();
    assert!(new.starts_with("ocs_") && new != client.secret);
}

async fn client_configuration_is_the_merchants_own_and_checked(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let path = format!("/v1/merchants/applications/{}/oidc", client.application.id);
    let stranger = app.register_merchant().await;
    let body =
        json!({"redirectUris": [REDIRECT], "tokenEndpointAuthMethod": "client_secret_basic"});
    error(
        configure(&app, &stranger, &client.application.id, &body).await,
        404,
        "not_found",
    )
    .await;
    for (method, suffix) in [(Method::GET, ""), (Method::POST, "/rotate-secret")] {
        let response = app
            .as_merchant(method, &format!("{path}{suffix}"), &stranger.token)
            .send()
            .await
            .unwrap();
        error(response, 404, "not_found").await;
    }
    let unconfigured = app.application(&client.merchant).await;
    let response = app
        .as_merchant(
            Method::GET,
            &format!("/v1/merchants/applications/{}/oidc", unconfigured.id),
            &client.merchant.token,
        )
        .send()
        .await
        .unwrap();
    error(response, 404, "not_found").await;

    // Invalid values change nothing: 422 with every field named.
    let bad = json!({
        "redirectUris": ["https://*.shop.example/cb", "http://shop.example/cb", "https://shop.example/cb#frag"],
        "tokenEndpointAuthMethod": "none",
        "dpopBoundAccessTokens": "yes"
    });
    error(
        configure(&app, &client.merchant, &client.application.id, &bad).await,
        400,
        "bad_request",
    )
    .await;
    let bad = json!({
        "redirectUris": ["https://*.shop.example/cb", "http://shop.example/cb", "https://shop.example/cb#frag"],
        "tokenEndpointAuthMethod": "none"
    });
    let refused = error(
        configure(&app, &client.merchant, &client.application.id, &bad).await,
        422,
        "validation_error",
    )
    .await;
    let fields: Vec<&str> = refused["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "redirectUris[0]",
            "redirectUris[1]",
            "redirectUris[2]",
            "tokenEndpointAuthMethod"
        ]
    );
    let missing = json!({"tokenEndpointAuthMethod": "client_secret_basic"});
    error(
        configure(&app, &client.merchant, &client.application.id, &missing).await,
        400,
        "bad_request",
    )
    .await;
    let read = json(
        app.as_merchant(Method::GET, &path, &client.merchant.token)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["data"]["redirectUris"], json!([REDIRECT]));
}

async fn a_wrong_redirect_uri_shows_an_error_page_and_never_redirects(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    for extra in [
        vec![("redirect_uri", "http://localhost:4000/callback/")],
        vec![("redirect_uri", "https://attacker.example/cb")],
        vec![("redirect_uri", "")],
        vec![("client_id", "app_00000000000000000000000000")],
    ] {
        let url = authorize_url(&app, &client.client_id, &extra);
        let response = no_redirects().get(&url).send().await.unwrap();
        assert_eq!(response.status(), 400, "{extra:?}");
        assert!(response.headers().get("location").is_none());
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        let page = response.text().await.unwrap();
        assert!(page.contains("cannot be completed"), "{page}");
    }
}

async fn request_errors_go_back_to_the_client_with_state_and_iss(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let issuer = app.url("");
    let issuer = issuer.trim_end_matches('/');
    for (extra, expected) in [
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("scope", "phone")], "invalid_scope"),
        (
            vec![("response_type", "token")],
            "unsupported_response_type",
        ),
        (vec![("prompt", "none")], "login_required"),
        (vec![("login_hint", "0612345678")], "invalid_request"),
    ] {
        let location = location_of(&authorize_url(&app, &client.client_id, &extra)).await;
        assert!(location.starts_with(REDIRECT), "{location}");
        assert_eq!(
            param(&location, "error").as_deref(),
            Some(expected),
            "{extra:?}"
        );
        assert_eq!(param(&location, "state").as_deref(), Some("st 42/x"));
        assert_eq!(param(&location, "iss").as_deref(), Some(issuer));
        assert!(param(&location, "code").is_none());
    }
}

/// A code issued through the whole flow for an enrolled user.
async fn code_for(app: &TestApp, client: &Client, user: &mut AppUser) -> String {
    let url = authorize_url(
        app,
        &client.client_id,
        &[("login_hint", user.phone.as_str())],
    );
    let landed = approve_in_app(app, user, &url).await;
    assert!(landed.starts_with(REDIRECT), "{landed}");
    assert_eq!(param(&landed, "state").as_deref(), Some("st 42/x"));
    param(&landed, "code").unwrap()
}

async fn a_reused_code_is_refused_and_revokes_the_token_it_gave(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let mut user = AppUser::enrolled(&app).await;
    let code = code_for(&app, &client, &mut user).await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let first = token(&app, &client, &form).await;
    assert_eq!(first.headers()["cache-control"], "no-store");
    let first: Value = json(first, 200).await;
    let access = first["access_token"].as_str().unwrap().to_owned();
    let userinfo = |token: String| {
        let app = &app;
        async move {
            app.client
                .get(app.url("/oauth2/userinfo"))
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
        }
    };
    let info: Value = json(userinfo(access.clone()).await, 200).await;
    assert_eq!(info["phone_number"], user.phone.as_str());
    assert_eq!(info["phone_number_verified"], true);
    assert_eq!(info["verification"]["phone_number"]["source"], "sms_otp");
    // Pairwise: not the phone number.
    assert_ne!(info["sub"], user.phone.as_str());

    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    assert!(refresh.starts_with("ort_"));

    let again: Value = json(token(&app, &client, &form).await, 400).await;
    assert_eq!(again["error"], "invalid_grant");
    // The reuse ends the family: the refresh token of the first exchange no longer works.
    let refreshed: Value = json(
        token(
            &app,
            &client,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh.as_str()),
            ],
        )
        .await,
        400,
    )
    .await;
    assert_eq!(refreshed["error"], "invalid_grant");
    let revoked = userinfo(access).await;
    assert_eq!(revoked.status(), 401);
    assert!(
        revoked.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("invalid_token")
    );
}

async fn a_rotated_secret_no_longer_authenticates(app: TestApp) {
    let mut client = client(&app, "client_secret_basic").await;
    let mut user = AppUser::enrolled(&app).await;
    let code = code_for(&app, &client, &mut user).await;
    let rotated = json(
        app.as_merchant(
            Method::POST,
            &format!(
                "/v1/merchants/applications/{}/oidc/rotate-secret",
                client.application.id
            ),
            &client.merchant.token,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let refused = token(&app, &client, &form).await;
    assert_eq!(refused.status(), 401);
    assert!(refused.headers().contains_key("www-authenticate"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "invalid_client");
    // The refused client did not spend the code: with the new secret it is exchanged.
    client.secret = rotated["data"]["clientSecret"].as_str().unwrap().to_owned();
    let granted: Value = json(token(&app, &client, &form).await, 200).await;
    assert!(granted["id_token"].is_string());
    // Registered for basic: the same secret in the body is refused.
    let post = with_form(
        app.client.post(app.url("/oauth2/token")),
        &[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("client_id", client.client_id.as_str()),
            ("client_secret", client.secret.as_str()),
        ],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(post.status(), 401);
}

async fn without_login_hint_a_page_asks_for_the_phone(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let url = authorize_url(&app, &client.client_id, &[]);
    let response = no_redirects().get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("form-action 'self'"));
    let page = response.text().await.unwrap();
    assert!(page.contains("name=\"login_hint\""));
    assert!(page.contains("value=\"st 42/x\""));
    // The form posts the same parameters with the phone: the session starts.
    let user = AppUser::enrolled(&app).await;
    let mut form: Vec<(String, String)> = query_of(&url);
    form.push(("login_hint".into(), user.phone.clone()));
    let started = with_form(no_redirects().post(app.url("/oauth2/authorize")), &form)
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 303);
    let hosted = started.headers()["location"].to_str().unwrap().to_owned();
    let session = hosted.rsplit('/').next().unwrap().to_owned();
    let begun = user.begun(&app, "consent", Some(&session)).await;
    assert_eq!(begun["context"]["intent"], "OAUTH");
}

async fn a_live_client_uses_https_and_asks_only_enrolled_phones(app: TestApp) {
    let (merchant, application, _) = app.live_merchant().await;
    // Live consent sessions send their events over https only (CONTRACT §8).
    let patched = app
        .as_merchant(
            Method::PATCH,
            &format!("/v1/merchants/applications/{}", application.id),
            &merchant.token,
        )
        .json(&json!({"callbackUrl": "https://shop.example/hooks"}))
        .send()
        .await
        .unwrap();
    json(patched, 200).await;
    // localhost is a sandbox privilege.
    let local =
        json!({"redirectUris": [REDIRECT], "tokenEndpointAuthMethod": "client_secret_basic"});
    let refused = error(
        configure(&app, &merchant, &application.id, &local).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "redirectUris[0]");
    let live_redirect = "https://shop.example/oidc/callback";
    let body =
        json!({"redirectUris": [live_redirect], "tokenEndpointAuthMethod": "client_secret_basic"});
    json(
        configure(&app, &merchant, &application.id, &body).await,
        200,
    )
    .await;

    // A phone nobody enrolled: back to the client with access_denied, no session for it.
    let mut url = Url::parse(&authorize_url(
        &app,
        &application.id,
        &[("login_hint", "+15550009999")],
    ))
    .unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == "redirect_uri" {
                live_redirect.to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let location = location_of(url.as_str()).await;
    assert!(location.starts_with(live_redirect), "{location}");
    assert_eq!(
        param(&location, "error").as_deref(),
        Some("access_denied"),
        "{location}"
    );

    // An enrolled user is asked: the browser goes to the hosted page.
    let user = AppUser::enrolled(&app).await;
    let enrolled = url
        .as_str()
        .replace("%2B15550009999", &user.phone.replace('+', "%2B"));
    let hosted = location_of(&enrolled).await;
    assert!(hosted.contains("/oauth/authorize/cs_"), "{hosted}");
}
