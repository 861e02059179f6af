//! What the OpenID Connect tests share: a service whose issuer is its real address, a configured
//! client, the authorization URL, the app approving, the token endpoint.

use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::scenario::{Application, Merchant};
use idconsent_e2e::{TestApp, json};
use reqwest::{Method, Response, Url};
use serde_json::{Value, json};

/// A service whose `IDC_BASE_URL` is its real address (a free port chosen first).
pub async fn start(backend: idconsent_e2e::Backend) -> Option<TestApp> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    TestApp::start_with(backend, |config| {
        config.bind = format!("127.0.0.1:{port}");
        config.base_url = format!("http://127.0.0.1:{port}");
    })
    .await
}

pub const REDIRECT: &str = "http://localhost:4000/callback";
pub const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
pub const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// `fields` as an `application/x-www-form-urlencoded` body.
pub fn with_form<K: AsRef<str>, V: AsRef<str>>(
    request: reqwest::RequestBuilder,
    fields: &[(K, V)],
) -> reqwest::RequestBuilder {
    let mut url = Url::parse("http://form.invalid/").unwrap();
    url.query_pairs_mut()
        .extend_pairs(fields.iter().map(|(k, v)| (k.as_ref(), v.as_ref())));
    request
        .header("content-type", "application/x-www-form-urlencoded")
        .body(url.query().unwrap_or_default().to_owned())
}

pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// An OpenID Connect client: a sandbox application and its configuration.
pub struct Client {
    pub merchant: Merchant,
    pub application: Application,
    pub client_id: String,
    pub secret: String,
}

pub async fn configure(app: &TestApp, merchant: &Merchant, id: &str, body: &Value) -> Response {
    app.as_merchant(
        Method::PUT,
        &format!("/v1/merchants/applications/{id}/oidc"),
        &merchant.token,
    )
    .json(body)
    .send()
    .await
    .unwrap()
}

/// A sandbox client authenticating by `method` with [`REDIRECT`] registered.
pub async fn client(app: &TestApp, method: &str) -> Client {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let body = json!({"redirectUris": [REDIRECT], "tokenEndpointAuthMethod": method});
    let configured = json(configure(app, &merchant, &application.id, &body).await, 200).await;
    Client {
        client_id: configured["data"]["clientId"].as_str().unwrap().to_owned(),
        secret: configured["data"]["clientSecret"]
            .as_str()
            .unwrap()
            .to_owned(),
        merchant,
        application,
    }
}

/// The query of `url` as pairs.
pub fn query_of(url: &str) -> Vec<(String, String)> {
    Url::parse(url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub fn param(url: &str, name: &str) -> Option<String> {
    query_of(url)
        .into_iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value)
}

/// Follows one redirect hop by hand: the `Location` of a 303.
pub async fn location_of(url: &str) -> String {
    let response = no_redirects().get(url).send().await.unwrap();
    assert_eq!(response.status(), 303, "{url}");
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// The browser's part: from the authorization URL to the hosted page; the app's part: the
/// user approves by passkey; then the browser lands on the redirect URI. Returns that URL.
pub async fn approve_in_app(app: &TestApp, user: &mut AppUser, authorization_url: &str) -> String {
    let hosted = location_of(authorization_url).await;
    assert!(
        hosted.starts_with(&app.url("/oauth/authorize/cs_")),
        "{hosted}"
    );
    let session = hosted.rsplit('/').next().unwrap().to_owned();
    let begun = user.begun(app, "consent", Some(&session)).await;
    assert_eq!(begun["context"]["intent"], "OAUTH");
    let credential = user.sign(&begun);
    json(
        user.complete(app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    location_of(&hosted).await
}

pub fn authorize_url(app: &TestApp, client_id: &str, extra: &[(&str, &str)]) -> String {
    let mut url = Url::parse(&app.url("/oauth2/authorize")).unwrap();
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in [
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", REDIRECT),
            ("scope", "openid phone"),
            ("state", "st 42/x"),
            ("nonce", "n-0S6_WzA2Mj"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
        ] {
            if !extra.iter().any(|(n, _)| *n == name) {
                query.append_pair(name, value);
            }
        }
        for (name, value) in extra {
            if !value.is_empty() {
                query.append_pair(name, value);
            }
        }
    }
    url.to_string()
}

pub async fn token(app: &TestApp, client: &Client, form: &[(&str, &str)]) -> Response {
    with_form(
        app.client
            .post(app.url("/oauth2/token"))
            .basic_auth(&client.client_id, Some(&client.secret)),
        form,
    )
    .send()
    .await
    .unwrap()
}
