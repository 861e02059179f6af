//! The provider's metadata (OpenID Connect Discovery 1.0 §3, RFC 8414): only what is served.
//! The document grows with the provider; a field names a feature only once it works.

use serde_json::{Value, json};

use crate::model::AuthMethod;
use crate::provider::{ACR, CIBA_GRANT, SCOPE_CLAIMS};

/// The `/.well-known/openid-configuration` document of the provider at `issuer` (no trailing
/// slash: `iss` of every token and response is exactly this string).
pub fn document(issuer: &str) -> Value {
    let mut scopes = vec!["openid"];
    scopes.extend(SCOPE_CLAIMS.iter().map(|(scope, _)| *scope));
    let mut claims = vec![
        "sub",
        "iss",
        "aud",
        "exp",
        "iat",
        "auth_time",
        "nonce",
        "acr",
        "amr",
        "at_hash",
        "phone_number_verified",
        "email_verified",
        "verification",
    ];
    for (_, keys) in SCOPE_CLAIMS {
        claims.extend(keys.iter().map(|key| key.as_str()));
    }
    let auth_methods = [
        AuthMethod::ClientSecretBasic.as_str(),
        AuthMethod::ClientSecretPost.as_str(),
    ];
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/oauth2/authorize"),
        "token_endpoint": format!("{issuer}/oauth2/token"),
        "userinfo_endpoint": format!("{issuer}/oauth2/userinfo"),
        "revocation_endpoint": format!("{issuer}/oauth2/revoke"),
        "introspection_endpoint": format!("{issuer}/oauth2/introspect"),
        "backchannel_authentication_endpoint": format!("{issuer}/oauth2/bc-authorize"),
        "backchannel_token_delivery_modes_supported": ["poll"],
        "backchannel_user_code_parameter_supported": false,
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", CIBA_GRANT],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "token_endpoint_auth_methods_supported": auth_methods,
        "revocation_endpoint_auth_methods_supported": auth_methods,
        "introspection_endpoint_auth_methods_supported": auth_methods,
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": scopes,
        "claims_supported": claims,
        "acr_values_supported": [ACR],
        "prompt_values_supported": ["none", "login", "consent"],
        "authorization_response_iss_parameter_supported": true,
        "request_parameter_supported": false,
        "request_uri_parameter_supported": false,
        "claims_parameter_supported": false,
    })
}
