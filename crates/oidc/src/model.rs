//! A client's configuration and the rules it obeys (CONTRACT §10).

use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{Environment, Timestamp, ValidationErrors, WebUrl};
use serde_json::Value;

/// At most this many redirect URIs (and as many post-logout redirect URIs) per client.
pub const MAX_REDIRECT_URIS: usize = 10;

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    ClientSecretBasic,
    ClientSecretPost,
    PrivateKeyJwt,
}

impl AuthMethod {
    pub const ALL: [AuthMethod; 3] = [
        AuthMethod::ClientSecretBasic,
        AuthMethod::ClientSecretPost,
        AuthMethod::PrivateKeyJwt,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::ClientSecretBasic => "client_secret_basic",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Whether the client holds a secret of ours.
    pub fn uses_secret(self) -> bool {
        !matches!(self, AuthMethod::PrivateKeyJwt)
    }
}

/// How a CIBA client learns that a request was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryMode {
    Poll,
    Ping,
}

impl DeliveryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::Poll => "poll",
            DeliveryMode::Ping => "ping",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [DeliveryMode::Poll, DeliveryMode::Ping]
            .into_iter()
            .find(|m| m.as_str() == text)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Default,
    /// FAPI 2.0 Security Profile: PAR, PKCE, `private_key_jwt` and DPoP required.
    Fapi2,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Default => "default",
            Profile::Fapi2 => "fapi2",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Profile::Default, Profile::Fapi2]
            .into_iter()
            .find(|p| p.as_str() == text)
    }
}

/// An application's OpenID Connect client configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// Also the `client_id`.
    pub application_id: ApplicationId,
    /// Compared with `redirect_uri` as exact strings, as registered.
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub auth_method: AuthMethod,
    /// The client's public keys for `private_key_jwt` (an RFC 7517 key set), or where to fetch them.
    pub jwks: Option<Value>,
    pub jwks_uri: Option<String>,
    pub delivery_mode: DeliveryMode,
    pub notification_endpoint: Option<String>,
    pub require_par: bool,
    pub dpop_bound: bool,
    pub profile: Profile,
    /// The keyed hash of the client secret (`None` for `private_key_jwt`).
    pub secret_hash: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl ClientConfig {
    pub fn redirect_uri_registered(&self, uri: &str) -> bool {
        self.redirect_uris
            .iter()
            .any(|registered| registered == uri)
    }
}

/// `PUT …/oidc` as received (JSON types already checked).
#[derive(Debug, Clone, Default)]
pub struct ClientInput {
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub token_endpoint_auth_method: String,
    pub jwks: Option<Value>,
    pub jwks_uri: Option<String>,
    pub backchannel_token_delivery_mode: Option<String>,
    pub backchannel_client_notification_endpoint: Option<String>,
    pub require_pushed_authorization_requests: Option<bool>,
    pub dpop_bound_access_tokens: Option<bool>,
    pub profile: Option<String>,
}

/// The settings of a valid input, before they are stamped with ids and times.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings {
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub auth_method: AuthMethod,
    pub jwks: Option<Value>,
    pub jwks_uri: Option<String>,
    pub delivery_mode: DeliveryMode,
    pub notification_endpoint: Option<String>,
    pub require_par: bool,
    pub dpop_bound: bool,
    pub profile: Profile,
}

/// Whether a URI may receive our redirects (or pings) in `environment`: an absolute URL
/// without fragment, credentials or wildcard; `https`, or plain `http` to a loopback host in
/// sandbox only. Returns why not.
pub fn check_client_uri(uri: &str, environment: Environment) -> Result<(), &'static str> {
    if uri.contains('*') {
        return Err("must not contain wildcards");
    }
    let url = WebUrl::parse(uri).map_err(|_| {
        "must be an absolute https URL without fragment or credentials, at most 2048 characters"
    })?;
    let loopback = matches!(url.host(), "localhost" | "127.0.0.1" | "[::1]" | "::1");
    match (environment, url.is_https(), loopback) {
        (Environment::Sandbox, _, true) => Ok(()),
        (_, true, false) => Ok(()),
        (Environment::Live, _, true) => Err("must not point to localhost in live"),
        (_, false, false) => Err("must use https (http only to localhost, in sandbox)"),
    }
}

fn check_uri_list(
    errors: &mut ValidationErrors,
    field: &str,
    uris: &[String],
    environment: Environment,
    required: bool,
) {
    if required && uris.is_empty() {
        errors.push(field, "must name at least one URI");
    }
    if uris.len() > MAX_REDIRECT_URIS {
        errors.push(field, format!("must name at most {MAX_REDIRECT_URIS} URIs"));
    }
    for (index, uri) in uris.iter().enumerate() {
        if let Err(why) = check_client_uri(uri, environment) {
            errors.push(format!("{field}[{index}]"), why);
        } else if uris[..index].contains(uri) {
            errors.push(format!("{field}[{index}]"), "is listed twice");
        }
    }
}

/// A JWKS as `private_key_jwt` needs it: an object with a non-empty `keys` array of objects
/// that each name their `kty` (the keys themselves are read when a client authenticates).
fn check_jwks(errors: &mut ValidationErrors, jwks: &Value) {
    let keys = jwks.get("keys").and_then(Value::as_array);
    match keys {
        Some(keys) if !keys.is_empty() && keys.len() <= 20 => {
            for (index, key) in keys.iter().enumerate() {
                if key.get("kty").and_then(Value::as_str).is_none() {
                    errors.push(format!("jwks.keys[{index}]"), "must be a JWK with a kty");
                }
                if key.get("d").is_some() {
                    errors.push(
                        format!("jwks.keys[{index}]"),
                        "must be a public key (no private part)",
                    );
                }
            }
        }
        _ => errors.push("jwks", "must be a key set {\"keys\": [..]} of 1 to 20 keys"),
    }
}

impl ClientInput {
    /// Checks every field and gathers every problem; an input is valid for one environment.
    pub(crate) fn validate(&self, environment: Environment) -> Result<Settings, ValidationErrors> {
        let mut errors = ValidationErrors::new();
        check_uri_list(
            &mut errors,
            "redirectUris",
            &self.redirect_uris,
            environment,
            true,
        );
        let post_logout = self.post_logout_redirect_uris.clone().unwrap_or_default();
        check_uri_list(
            &mut errors,
            "postLogoutRedirectUris",
            &post_logout,
            environment,
            false,
        );
        let auth_method = AuthMethod::parse(&self.token_endpoint_auth_method);
        if auth_method.is_none() {
            errors.push(
                "tokenEndpointAuthMethod",
                "must be client_secret_basic, client_secret_post or private_key_jwt",
            );
        }
        match (auth_method, &self.jwks, &self.jwks_uri) {
            (Some(AuthMethod::PrivateKeyJwt), None, None) => {
                errors.push("jwks", "private_key_jwt needs jwks or jwksUri")
            }
            (Some(AuthMethod::PrivateKeyJwt), Some(_), Some(_)) => {
                errors.push("jwksUri", "give jwks or jwksUri, not both")
            }
            (Some(method), jwks, uri)
                if method.uses_secret() && (jwks.is_some() || uri.is_some()) =>
            {
                errors.push("jwks", "only private_key_jwt clients register keys")
            }
            _ => {}
        }
        if let Some(jwks) = &self.jwks {
            check_jwks(&mut errors, jwks);
        }
        if let Some(uri) = &self.jwks_uri
            && let Err(why) = check_client_uri(uri, environment)
        {
            errors.push("jwksUri", why);
        }
        let delivery_mode = match self.backchannel_token_delivery_mode.as_deref() {
            None => Some(DeliveryMode::Poll),
            Some(text) => DeliveryMode::parse(text),
        };
        if delivery_mode.is_none() {
            errors.push("backchannelTokenDeliveryMode", "must be poll or ping");
        }
        let endpoint = self.backchannel_client_notification_endpoint.clone();
        match (delivery_mode, &endpoint) {
            (Some(DeliveryMode::Ping), None) => errors.push(
                "backchannelClientNotificationEndpoint",
                "is required for ping delivery",
            ),
            (Some(DeliveryMode::Poll), Some(_)) => errors.push(
                "backchannelClientNotificationEndpoint",
                "is only used with ping delivery",
            ),
            (_, Some(uri)) => {
                if let Err(why) = check_client_uri(uri, environment) {
                    errors.push("backchannelClientNotificationEndpoint", why);
                }
            }
            _ => {}
        }
        let profile = match self.profile.as_deref() {
            None => Some(Profile::Default),
            Some(text) => Profile::parse(text),
        };
        if profile.is_none() {
            errors.push("profile", "must be default or fapi2");
        }
        let require_par = self.require_pushed_authorization_requests.unwrap_or(false);
        let dpop_bound = self.dpop_bound_access_tokens.unwrap_or(false);
        if profile == Some(Profile::Fapi2) {
            if auth_method != Some(AuthMethod::PrivateKeyJwt) {
                errors.push("tokenEndpointAuthMethod", "fapi2 requires private_key_jwt");
            }
            if !require_par {
                errors.push(
                    "requirePushedAuthorizationRequests",
                    "fapi2 requires pushed authorization requests",
                );
            }
            if !dpop_bound {
                errors.push("dpopBoundAccessTokens", "fapi2 requires DPoP-bound tokens");
            }
        }
        not_supported_yet(
            &mut errors,
            auth_method,
            delivery_mode,
            require_par,
            dpop_bound,
            profile,
        );
        errors.finish_with(|| {
            Some(Settings {
                redirect_uris: self.redirect_uris.clone(),
                post_logout_redirect_uris: post_logout,
                auth_method: auth_method?,
                jwks: self.jwks.clone(),
                jwks_uri: self.jwks_uri.clone(),
                delivery_mode: delivery_mode?,
                notification_endpoint: endpoint,
                require_par,
                dpop_bound,
                profile: profile?,
            })
        })
    }
}

/// Settings the contract pins but the provider does not serve yet: refused (422) rather than
/// stored and silently ignored, so no client believes it is protected by them. Each line goes
/// when its feature ships (see docs/oidc.md, "Not yet").
fn not_supported_yet(
    errors: &mut ValidationErrors,
    auth_method: Option<AuthMethod>,
    delivery_mode: Option<DeliveryMode>,
    require_par: bool,
    dpop_bound: bool,
    profile: Option<Profile>,
) {
    if auth_method == Some(AuthMethod::PrivateKeyJwt) {
        errors.push(
            "tokenEndpointAuthMethod",
            "private_key_jwt is not supported yet",
        );
    }
    if delivery_mode == Some(DeliveryMode::Ping) {
        errors.push("backchannelTokenDeliveryMode", "ping is not supported yet");
    }
    if require_par {
        errors.push(
            "requirePushedAuthorizationRequests",
            "pushed authorization requests are not supported yet",
        );
    }
    if dpop_bound {
        errors.push("dpopBoundAccessTokens", "DPoP is not supported yet");
    }
    if profile == Some(Profile::Fapi2) {
        errors.push("profile", "fapi2 is not supported yet");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idconsent_kernel::id::TypedId;

    fn input(uris: &[&str]) -> ClientInput {
        ClientInput {
            redirect_uris: uris.iter().map(|u| (*u).to_owned()).collect(),
            token_endpoint_auth_method: "client_secret_basic".into(),
            ..ClientInput::default()
        }
    }

    fn fields(result: Result<Settings, ValidationErrors>) -> Vec<String> {
        result
            .err()
            .map(|e| e.fields().iter().map(|f| f.field.clone()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn localhost_is_a_sandbox_privilege() {
        let local = input(&["http://localhost:3000/cb"]);
        assert!(local.validate(Environment::Sandbox).is_ok());
        assert_eq!(
            fields(local.validate(Environment::Live)),
            ["redirectUris[0]"]
        );
        let plain = input(&["http://shop.example/cb"]);
        assert_eq!(
            fields(plain.validate(Environment::Sandbox)),
            ["redirectUris[0]"]
        );
        assert!(
            input(&["https://shop.example/cb"])
                .validate(Environment::Live)
                .is_ok()
        );
    }

    #[test]
    fn wildcards_fragments_and_duplicates_are_refused() {
        let bad = input(&[
            "https://*.shop.example/cb",
            "https://shop.example/cb#x",
            "https://shop.example/ok",
            "https://shop.example/ok",
            "shop.example/cb",
        ]);
        assert_eq!(
            fields(bad.validate(Environment::Live)),
            [
                "redirectUris[0]",
                "redirectUris[1]",
                "redirectUris[3]",
                "redirectUris[4]"
            ]
        );
        assert_eq!(
            fields(input(&[]).validate(Environment::Live)),
            ["redirectUris"]
        );
    }

    #[test]
    fn redirect_uris_match_exactly_as_registered() {
        let settings = input(&["https://shop.example/cb"])
            .validate(Environment::Live)
            .unwrap();
        let config = ClientConfig {
            application_id: ApplicationId::from_trusted("app_x".into()),
            redirect_uris: settings.redirect_uris,
            post_logout_redirect_uris: vec![],
            auth_method: settings.auth_method,
            jwks: None,
            jwks_uri: None,
            delivery_mode: settings.delivery_mode,
            notification_endpoint: None,
            require_par: false,
            dpop_bound: false,
            profile: settings.profile,
            secret_hash: None,
            created_at: Timestamp::from_millis(0),
            updated_at: Timestamp::from_millis(0),
        };
        assert!(config.redirect_uri_registered("https://shop.example/cb"));
        for near in [
            "https://shop.example/cb/",
            "https://shop.example/cb?x=1",
            "https://SHOP.example/cb",
            "https://shop.example:443/cb",
        ] {
            assert!(!config.redirect_uri_registered(near), "{near}");
        }
    }

    #[test]
    fn unknown_enums_and_unsupported_features_are_422() {
        let mut bad = input(&["https://shop.example/cb"]);
        bad.token_endpoint_auth_method = "none".into();
        bad.backchannel_token_delivery_mode = Some("push".into());
        bad.profile = Some("fapi1".into());
        assert_eq!(
            fields(bad.validate(Environment::Live)),
            [
                "tokenEndpointAuthMethod",
                "backchannelTokenDeliveryMode",
                "profile"
            ]
        );
        let mut later = input(&["https://shop.example/cb"]);
        later.dpop_bound_access_tokens = Some(true);
        assert_eq!(
            fields(later.validate(Environment::Live)),
            ["dpopBoundAccessTokens"]
        );
    }

    #[test]
    fn secret_clients_register_no_keys_and_ping_needs_an_endpoint() {
        let mut keys = input(&["https://shop.example/cb"]);
        keys.jwks_uri = Some("https://shop.example/jwks".into());
        assert_eq!(fields(keys.validate(Environment::Live)), ["jwks"]);
        let mut poll = input(&["https://shop.example/cb"]);
        poll.backchannel_client_notification_endpoint = Some("https://shop.example/n".into());
        assert_eq!(
            fields(poll.validate(Environment::Live)),
            ["backchannelClientNotificationEndpoint"]
        );
    }
}
