//! `PUT|GET /v1/merchants/applications/:id/oidc`, `POST …/oidc/rotate-secret` (J).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, put, web};
use idconsent_kernel::Timestamp;
use idconsent_merchant::Actor;
use idconsent_merchant::model::Role;
use idconsent_oidc::OidcClients;
use idconsent_oidc::{ClientConfig, ClientInput, ClientManager, Configured};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

fn manager(actor: &Actor) -> ClientManager {
    ClientManager {
        merchant_id: actor.user.merchant_id.clone(),
        may_configure: matches!(actor.user.role, Role::Owner | Role::Admin),
    }
}

/// The client configuration (CONTRACT §10).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientBody {
    /// 1 to 10 absolute URLs, matched exactly; `https`, or `http://localhost` in sandbox.
    redirect_uris: Vec<String>,
    post_logout_redirect_uris: Option<Vec<String>>,
    /// `client_secret_basic` or `client_secret_post` (`private_key_jwt` is not served yet).
    token_endpoint_auth_method: String,
    #[schema(value_type = Option<Object>)]
    jwks: Option<Value>,
    jwks_uri: Option<String>,
    /// `poll` (default); `ping` is not served yet.
    backchannel_token_delivery_mode: Option<String>,
    backchannel_client_notification_endpoint: Option<String>,
    require_pushed_authorization_requests: Option<bool>,
    dpop_bound_access_tokens: Option<bool>,
    /// `default`; `fapi2` is not served yet.
    profile: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientView {
    /// The application's id.
    client_id: String,
    redirect_uris: Vec<String>,
    post_logout_redirect_uris: Vec<String>,
    token_endpoint_auth_method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    jwks: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    jwks_uri: Option<String>,
    backchannel_token_delivery_mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    backchannel_client_notification_endpoint: Option<String>,
    require_pushed_authorization_requests: bool,
    dpop_bound_access_tokens: bool,
    profile: &'static str,
    /// `ocs_…`: only on the first configuration and on rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    updated_at: Timestamp,
}

impl ClientView {
    fn of(config: ClientConfig, client_secret: Option<String>) -> Self {
        Self {
            client_id: config.application_id.as_str().to_owned(),
            redirect_uris: config.redirect_uris,
            post_logout_redirect_uris: config.post_logout_redirect_uris,
            token_endpoint_auth_method: config.auth_method.as_str(),
            jwks: config.jwks,
            jwks_uri: config.jwks_uri,
            backchannel_token_delivery_mode: config.delivery_mode.as_str(),
            backchannel_client_notification_endpoint: config.notification_endpoint,
            require_pushed_authorization_requests: config.require_par,
            dpop_bound_access_tokens: config.dpop_bound,
            profile: config.profile.as_str(),
            client_secret,
            created_at: config.created_at,
            updated_at: config.updated_at,
        }
    }
}

fn configured(message: &str, configured: Configured) -> HttpResponse {
    respond(
        StatusCode::OK,
        message,
        ClientView::of(configured.config, configured.secret),
    )
}

/// Makes the application an OpenID Connect client, or changes its configuration (owner,
/// admin). The client secret is in the response only when this call created it.
#[utoipa::path(
    tag = "oidc",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`), also the client_id")),
    request_body = ClientBody,
    responses(
        (status = 200, description = "Configured", body = Envelope<ClientView>),
        (status = 400, description = "Malformed body or a missing field", body = ErrorBody),
        (status = 403, description = "Only owners and admins configure clients", body = ErrorBody),
        (status = 404, description = "Not one of the merchant's applications", body = ErrorBody),
        (status = 422, description = "A redirect URI or setting is invalid", body = ErrorBody)
    )
)]
#[put("/v1/merchants/applications/{id}/oidc")]
pub async fn configure(
    clients: web::Data<OidcClients>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
    ApiJson(body): ApiJson<ClientBody>,
) -> Result<HttpResponse, ApiError> {
    let input = ClientInput {
        redirect_uris: body.redirect_uris,
        post_logout_redirect_uris: body.post_logout_redirect_uris,
        token_endpoint_auth_method: body.token_endpoint_auth_method,
        jwks: body.jwks,
        jwks_uri: body.jwks_uri,
        backchannel_token_delivery_mode: body.backchannel_token_delivery_mode,
        backchannel_client_notification_endpoint: body.backchannel_client_notification_endpoint,
        require_pushed_authorization_requests: body.require_pushed_authorization_requests,
        dpop_bound_access_tokens: body.dpop_bound_access_tokens,
        profile: body.profile,
    };
    let done = clients.configure(&manager(&actor), &id, input).await?;
    Ok(configured("OpenID Connect client configured", done))
}

/// The client configuration, never the secret (any team member).
#[utoipa::path(
    tag = "oidc",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    responses(
        (status = 200, description = "The configuration", body = Envelope<ClientView>),
        (status = 404, description = "Not one of the merchant's applications, or not configured", body = ErrorBody)
    )
)]
#[get("/v1/merchants/applications/{id}/oidc")]
pub async fn read(
    clients: web::Data<OidcClients>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let config = clients.read(&manager(&actor), &id).await?;
    Ok(respond(
        StatusCode::OK,
        "OpenID Connect client",
        ClientView::of(config, None),
    ))
}

/// A new client secret, shown once; the previous one is refused from now on (owner, admin).
#[utoipa::path(
    tag = "oidc",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Application id (`app_…`)")),
    responses(
        (status = 200, description = "Rotated", body = Envelope<ClientView>),
        (status = 403, description = "Only owners and admins rotate the secret", body = ErrorBody),
        (status = 404, description = "Not one of the merchant's applications, or not configured", body = ErrorBody),
        (status = 409, description = "The client uses private_key_jwt and has no secret", body = ErrorBody)
    )
)]
#[post("/v1/merchants/applications/{id}/oidc/rotate-secret")]
pub async fn rotate_secret(
    clients: web::Data<OidcClients>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let done = clients.rotate_secret(&manager(&actor), &id).await?;
    Ok(configured(
        "Client secret rotated; the previous one no longer works",
        done,
    ))
}
