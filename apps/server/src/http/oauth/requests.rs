use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::{QrFormat, QrOptions};
use idconsent_oauth::CreateAccessRequest;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::context::AppContext;
use crate::http::auth::{JsonReply, Signed};
use crate::http::consents::requester;
use crate::http::envelope::respond;
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

/// Asks the user to share verified claims (an OAUTH consent session). The QR opens the app;
/// the hosted page `/oauth/authorize/{sessionId}` shows it in a browser and redirects back.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = CreateBody,
    responses(
        (status = 201, description = "Created; data {sessionId, qr, status, type, redirectUri, state, expiresAt}", body = Object),
        (status = 403, description = "OAUTH not enabled for the application", body = ErrorBody),
        (status = 404, description = "Recipient is not enrolled (live)", body = ErrorBody),
        (status = 422, description = "Unregistered redirect URI, unknown claim, bad PKCE challenge", body = ErrorBody),
        (status = 429, description = "Too many requests for this recipient", body = ErrorBody)
    )
)]
#[post("/v1/oauth/requests")]
pub async fn create(
    context: web::Data<AppContext>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent(&context, "POST /v1/oauth/requests", || async {
            let body: CreateBody = signed.json()?;
            let application = &signed.caller.application;
            let redirects: Vec<String> = application
                .redirect_uris
                .iter()
                .map(ToString::to_string)
                .collect();
            let (session, request) = context
                .oauth
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
            let png = context
                .qr
                .render(
                    &context.consents.qr_payload(&session.id),
                    QrFormat::Png,
                    &QrOptions::default(),
                )
                .map_err(ApiError::internal)?;
            JsonReply::envelope(
                StatusCode::CREATED,
                "OAuth request created",
                json!({
                    "sessionId": session.id,
                    "qr": BASE64.encode(png),
                    "status": "pending",
                    "type": "OAUTH",
                    "redirectUri": request.redirect_uri,
                    "state": request.state,
                    "expiresAt": session.expires_at.to_rfc3339(),
                }),
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
        (status = 200, description = "Status", body = Object),
        (status = 404, description = "Not this application's request", body = ErrorBody)
    )
)]
#[post("/v1/oauth/requests/status")]
pub async fn status(
    context: web::Data<AppContext>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: StatusBody = signed.json()?;
    let status = context
        .oauth
        .status(&requester(&signed.caller), &body.session_id)
        .await?;
    Ok(respond(StatusCode::OK, "ok", status.to_json()))
}
