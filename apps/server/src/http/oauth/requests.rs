use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::Timestamp;
use idconsent_oauth::{CreateAccessRequest, NewAccessRequest, OAuthService, RequestStatus};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ClaimsBody;
use crate::http::auth::{JsonReply, Signed};
use crate::http::consents::requester;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateBody {
    /// The enrolled user's phone (E.164).
    recipient: String,
    /// One of the application's registered redirect URIs.
    redirect_uri: String,
    /// PKCE challenge (43–128 characters).
    code_challenge: String,
    /// `S256` (default) or `plain`.
    code_challenge_method: Option<String>,
    /// Claim keys the user is asked to share.
    #[serde(default)]
    claims: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    /// Webhook destination; defaults to the application's callback URL.
    callback_url: Option<String>,
    /// Returned unchanged.
    state: Option<String>,
    /// Shown with the approval request.
    description: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusBody {
    session_id: String,
}

/// A created OAuth request.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedAccessRequest {
    /// `cs_…`: the consent session the request is.
    session_id: String,
    /// Base64 PNG of the QR code encoding `<scheme>://auth/<sessionId>`.
    qr: String,
    /// `pending`.
    status: &'static str,
    /// `OAUTH`.
    #[serde(rename = "type")]
    kind: &'static str,
    redirect_uri: String,
    /// As sent; `null` without one.
    #[schema(required = true)]
    state: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
}

/// An OAuth request's status for the application that created it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessRequestStatus {
    /// `cs_…`
    session_id: String,
    /// `PENDING`, `APPROVED`, `REJECTED` or `EXPIRED`.
    status: String,
    /// `OAUTH`.
    #[serde(rename = "type")]
    kind: &'static str,
    redirect_uri: String,
    /// As sent; `null` without one.
    #[schema(required = true)]
    state: Option<String>,
    /// Once approved: the user's phone (the token's subject).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    recipient: Option<String>,
    /// Once approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    scopes: Option<Vec<String>>,
    /// Once approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    claims: Option<ClaimsBody>,
    /// Once approved.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime, nullable = false)]
    approved_at: Option<Timestamp>,
    /// The authorization code, until it is exchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    code: Option<String>,
    /// With `code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime, nullable = false)]
    code_expires_at: Option<Timestamp>,
}

impl From<&RequestStatus> for AccessRequestStatus {
    fn from(view: &RequestStatus) -> Self {
        let approved = view.approved();
        let code = approved.and_then(|approved| approved.code);
        Self {
            session_id: view.session.id.to_string(),
            status: view.status().as_str().to_uppercase(),
            kind: "OAUTH",
            redirect_uri: view.request.redirect_uri.clone(),
            state: view.request.state.clone(),
            recipient: approved.map(|approved| approved.grant.subject.clone()),
            scopes: approved.map(|approved| approved.grant.scopes.clone()),
            claims: approved.map(|approved| approved.claims.into()),
            approved_at: approved.map(|approved| approved.grant.approved_at),
            code: code.map(str::to_owned),
            code_expires_at: approved
                .filter(|approved| approved.code.is_some())
                .map(|approved| approved.grant.expires_at),
        }
    }
}

/// Asks the user to share verified claims (an OAUTH consent session). The QR opens the app;
/// the hosted page `/oauth/authorize/{sessionId}` shows it in a browser and redirects back.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = CreateBody,
    responses(
        (status = 201, description = "Created", body = Envelope<CreatedAccessRequest>),
        (status = 403, description = "OAUTH not enabled for the application", body = ErrorBody),
        (status = 404, description = "Recipient is not enrolled (live)", body = ErrorBody),
        (status = 422, description = "Unregistered redirect URI, unknown claim, bad PKCE challenge", body = ErrorBody),
        (status = 429, description = "Too many requests for this recipient", body = ErrorBody)
    )
)]
#[post("/v1/oauth/requests")]
pub async fn create(
    oauth: web::Data<OAuthService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent("POST /v1/oauth/requests", || async {
            let body: CreateBody = signed.json()?;
            let application = &signed.caller.application;
            let redirects: Vec<String> = application
                .redirect_uris
                .iter()
                .map(ToString::to_string)
                .collect();
            let NewAccessRequest {
                session,
                request,
                qr_png,
            } = oauth
                .create(
                    &requester(&signed.caller),
                    &redirects,
                    &application.callback_url.to_string(),
                    CreateAccessRequest {
                        recipient: body.recipient,
                        redirect_uri: body.redirect_uri,
                        code_challenge: body.code_challenge,
                        code_challenge_method: body.code_challenge_method,
                        claims: body.claims,
                        scopes: body.scopes,
                        callback_url: body.callback_url,
                        state: body.state,
                        description: body.description,
                    },
                )
                .await?;
            JsonReply::envelope(
                StatusCode::CREATED,
                "OAuth request created",
                CreatedAccessRequest {
                    session_id: session.id.to_string(),
                    qr: BASE64.encode(qr_png),
                    status: "pending",
                    kind: "OAUTH",
                    redirect_uri: request.redirect_uri,
                    state: request.state,
                    expires_at: session.expires_at,
                },
            )
        })
        .await
}

/// The request's status for the application that created it: `PENDING`, `APPROVED` (with
/// recipient, scopes, claims, approvedAt and, until exchanged, `code`), `REJECTED`, `EXPIRED`.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = StatusBody,
    responses(
        (status = 200, description = "Status", body = Envelope<AccessRequestStatus>),
        (status = 404, description = "Not this application's request", body = ErrorBody)
    )
)]
#[post("/v1/oauth/requests/status")]
pub async fn status(
    oauth: web::Data<OAuthService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: StatusBody = signed.json()?;
    let status = oauth
        .status(&requester(&signed.caller), &body.session_id)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        AccessRequestStatus::from(&status),
    ))
}
