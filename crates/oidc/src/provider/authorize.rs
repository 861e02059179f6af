//! `/oauth2/authorize`: the authorization code flow's front channel (OpenID Connect Core
//! §3.1.2, RFC 6749 §4.1, RFC 7636, RFC 9207). A request becomes an OAUTH consent session
//! that the hosted page shows and the user decides in the app.

use idconsent_kernel::PhoneNumber;
use idconsent_oauth::{CreateAccessRequest, OAuthError};

use super::claims::claims_of_scopes;
use super::{OidcProvider, ProtocolError, requester};
use crate::model::ClientConfig;
use crate::ports::{Authorization, ClientApplication, StoreError};

/// The authorization request's parameters as received (query or form).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizeParams {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub nonce: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub login_hint: Option<String>,
    pub prompt: Option<String>,
    pub max_age: Option<String>,
    pub response_mode: Option<String>,
    pub request: Option<String>,
    pub request_uri: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeOutcome {
    /// No `login_hint`: the page asks the user for their phone number and sends these
    /// parameters again with it.
    AskPhone { params: Box<AuthorizeParams> },
    /// The session exists: the browser goes to its hosted page (`location`).
    Started { location: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizeRefusal {
    /// The client or its redirect URI is not what was registered: an error page, never a
    /// redirect (RFC 6749 §4.1.2.1), so nobody can bounce a browser through us.
    Page(ProtocolError),
    /// Back to the client with `error`, `error_description`, `state` and `iss`.
    Redirect { location: String },
}

/// `uri` with `params` appended to its query (RFC 6749 §3.1.2: keep the query it has).
pub(crate) fn with_query(uri: &str, params: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(uri.len() + 128);
    out.push_str(uri);
    let mut serializer = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        serializer.append_pair(name, value);
    }
    let query = serializer.finish();
    if !query.is_empty() {
        out.push(if uri.contains('?') { '&' } else { '?' });
        out.push_str(&query);
    }
    out
}

fn too_long(value: &Option<String>, limit: usize) -> bool {
    value.as_ref().is_some_and(|v| v.len() > limit)
}

impl OidcProvider {
    /// Validates an authorization request and, with a phone to ask, starts its session.
    pub async fn authorize(
        &self,
        params: AuthorizeParams,
    ) -> Result<AuthorizeOutcome, AuthorizeRefusal> {
        let page = |error: &'static str, description: &str| {
            AuthorizeRefusal::Page(ProtocolError::new(error, description))
        };
        let Some(client_id) = params.client_id.as_deref() else {
            return Err(page("invalid_request", "client_id is missing"));
        };
        let (config, application) = match self.clients.client(client_id).await {
            Ok(Some(found)) => found,
            Ok(None) => return Err(page("invalid_request", "Unknown client_id")),
            Err(error) => return Err(AuthorizeRefusal::Page(ProtocolError::server(&error))),
        };
        let Some(redirect_uri) = params.redirect_uri.clone() else {
            return Err(page("invalid_request", "redirect_uri is missing"));
        };
        if !config.redirect_uri_registered(&redirect_uri) {
            return Err(page(
                "invalid_request",
                "redirect_uri is not one of the client's registered redirect URIs",
            ));
        }
        let back = |error: &'static str, description: &str| AuthorizeRefusal::Redirect {
            location: self.error_location(&redirect_uri, error, description, &params.state),
        };
        if let Some((error, description)) = Self::check(&params) {
            return Err(back(error, description));
        }
        let Some(phone) = params.login_hint.clone() else {
            return Ok(AuthorizeOutcome::AskPhone {
                params: Box::new(params),
            });
        };
        if PhoneNumber::parse(&phone).is_err() {
            return Err(back(
                "invalid_request",
                "login_hint must be a phone number in E.164 form, such as +15551234567",
            ));
        }
        self.start(&config, &application, &params, phone, redirect_uri.clone())
            .await
            .map_err(|(error, description)| back(error, &description))
    }

    /// The checks after the client and redirect URI are known; the first failure.
    fn check(params: &AuthorizeParams) -> Option<(&'static str, &'static str)> {
        if params.request.is_some() {
            return Some(("request_not_supported", "Request objects are not supported"));
        }
        if params.request_uri.is_some() {
            return Some(("request_uri_not_supported", "request_uri is not supported"));
        }
        if params.response_type.as_deref() != Some("code") {
            return Some((
                "unsupported_response_type",
                "Only response_type=code is supported",
            ));
        }
        if params
            .response_mode
            .as_deref()
            .is_some_and(|mode| mode != "query")
        {
            return Some(("invalid_request", "Only response_mode=query is supported"));
        }
        let scopes = params.scope.as_deref().unwrap_or_default();
        if !scopes.split(' ').any(|scope| scope == "openid") {
            return Some(("invalid_scope", "scope must include openid"));
        }
        if params.code_challenge.is_none() {
            return Some((
                "invalid_request",
                "PKCE is required: code_challenge is missing",
            ));
        }
        if params.code_challenge_method.as_deref() != Some("S256") {
            return Some(("invalid_request", "code_challenge_method must be S256"));
        }
        let prompts = params.prompt.as_deref().unwrap_or_default();
        if prompts.split(' ').any(|prompt| prompt == "none") {
            // Every login is an approval in the app: never without the user.
            return Some(("login_required", "The user must approve in the app"));
        }
        if params
            .max_age
            .as_deref()
            .is_some_and(|age| age.parse::<u32>().is_err())
        {
            return Some(("invalid_request", "max_age must be a number of seconds"));
        }
        if too_long(&params.state, 512)
            || too_long(&params.nonce, 512)
            || too_long(&params.scope, 1024)
        {
            return Some((
                "invalid_request",
                "state and nonce are limited to 512 characters, scope to 1024",
            ));
        }
        None
    }

    /// Creates the consent session (through the OAuth service: the same flood limits,
    /// recipient rules and hosted page) and records the nonce beside it.
    async fn start(
        &self,
        config: &ClientConfig,
        application: &ClientApplication,
        params: &AuthorizeParams,
        phone: String,
        redirect_uri: String,
    ) -> Result<AuthorizeOutcome, (&'static str, String)> {
        let scopes: Vec<String> = params
            .scope
            .as_deref()
            .unwrap_or_default()
            .split(' ')
            .filter(|scope| !scope.is_empty())
            .map(str::to_owned)
            .collect();
        let claims = claims_of_scopes(&scopes)
            .into_iter()
            .map(|key| key.as_str().to_owned())
            .collect();
        let requester = requester(application);
        let created = self
            .oauth
            .create(
                &requester,
                &config.redirect_uris,
                &application.callback_url,
                CreateAccessRequest {
                    recipient: phone,
                    redirect_uri,
                    code_challenge: params.code_challenge.clone().unwrap_or_default(),
                    code_challenge_method: Some("S256".into()),
                    claims,
                    scopes,
                    callback_url: None,
                    state: params.state.clone(),
                    description: None,
                },
            )
            .await;
        let session = created.map_err(refusal_of)?.session;
        let authorization = Authorization {
            session_id: session.id.clone(),
            application_id: application.id.clone(),
            nonce: params.nonce.clone(),
            backchannel: false,
            last_polled_at: None,
            created_at: self.clock.now(),
        };
        self.authorizations
            .insert(&authorization)
            .await
            .map_err(|error: StoreError| {
                let _ = error;
                ("server_error", "The request could not be stored".to_owned())
            })?;
        Ok(AuthorizeOutcome::Started {
            location: format!("{}/{}", self.settings.hosted_page_base, session.id.as_str()),
        })
    }

    /// The redirect of an error back to the client, with `iss` (RFC 9207).
    fn error_location(
        &self,
        redirect_uri: &str,
        error: &str,
        description: &str,
        state: &Option<String>,
    ) -> String {
        let mut params = vec![("error", error), ("error_description", description)];
        if let Some(state) = state {
            params.push(("state", state));
        }
        params.push(("iss", &self.settings.issuer));
        with_query(redirect_uri, &params)
    }
}

/// What the client learns of a refused session: RFC 6749 §4.1.2.1's words.
fn refusal_of(error: OAuthError) -> (&'static str, String) {
    use idconsent_kernel::ErrorCategory as C;
    let description = error.to_string();
    match error.category() {
        C::Validation | C::BadRequest => ("invalid_request", description),
        C::Forbidden => ("unauthorized_client", description),
        // A live client asks only enrolled phones (CONTRACT §4).
        C::NotFound => ("access_denied", description),
        C::RateLimited => ("temporarily_unavailable", description),
        _ => (
            "server_error",
            "The request could not be completed".to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::with_query;

    #[test]
    fn parameters_join_the_query_encoded() {
        assert_eq!(
            with_query(
                "https://rp.example/cb?x=1",
                &[("state", "a b&c"), ("iss", "https://id.example")]
            ),
            "https://rp.example/cb?x=1&state=a+b%26c&iss=https%3A%2F%2Fid.example"
        );
        assert_eq!(
            with_query("https://rp.example/cb", &[("code", "c")]),
            "https://rp.example/cb?code=c"
        );
    }
}
