use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_kernel::ValidationErrors;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::installation;
use crate::context::AppContext;
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBeginBody {
    enrollment_id: String,
    /// The 6-digit SMS code.
    otp: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialBody {
    challenge_id: String,
    /// The WebAuthn credential (`PublicKeyCredential` JSON, base64url binary fields).
    #[schema(value_type = Object)]
    credential: Value,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PurposeBody {
    /// `login`, `enrollment`, `consent`, `mandate` or `signature`.
    #[serde(rename = "type")]
    kind: String,
    /// The enrollment, session, mandate or signature request (not for `login`).
    id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AuthenticateBeginBody {
    phone: String,
    purpose: PurposeBody,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateCompleteBody {
    challenge_id: String,
    #[schema(value_type = Object)]
    credential: Value,
    /// `approve` (default) or `reject`, for consent, mandate and signature purposes.
    decision: Option<String>,
}

/// The `publicKey` member of WebAuthn options, as the app passes it to the authenticator.
fn public_key(options: Value) -> Value {
    match options {
        Value::Object(mut fields) => fields.remove("publicKey").unwrap_or(Value::Null),
        other => other,
    }
}

/// Checks the SMS code of an enrollment and starts a passkey registration (user verification
/// required).
#[utoipa::path(
    tag = "fido",
    request_body = RegisterBeginBody,
    responses(
        (status = 200, description = "Creation options", body = Object),
        (status = 400, description = "Invalid or expired code", body = ErrorBody),
        (status = 404, description = "Unknown enrollment", body = ErrorBody),
        (status = 409, description = "The enrollment already has a passkey", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/register/begin")]
pub async fn register_begin(
    context: web::Data<AppContext>,
    body: ApiJson<RegisterBeginBody>,
) -> Result<HttpResponse, ApiError> {
    let (challenge_id, options) = context
        .endusers
        .register_begin(&body.0.enrollment_id, &body.0.otp)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Create a passkey with these options",
        json!({"challengeId": challenge_id, "publicKey": public_key(options)}),
    ))
}

/// Verifies the new passkey and registers the device (event `device.registered`).
#[utoipa::path(
    tag = "fido",
    request_body = CredentialBody,
    responses(
        (status = 201, description = "Registered", body = Object),
        (status = 400, description = "Malformed credential", body = ErrorBody),
        (status = 401, description = "The credential does not verify, or the challenge is spent", body = ErrorBody),
        (status = 409, description = "Passkey already registered", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/register/complete")]
pub async fn register_complete(
    context: web::Data<AppContext>,
    req: HttpRequest,
    body: ApiJson<CredentialBody>,
) -> Result<HttpResponse, ApiError> {
    let device = context
        .endusers
        .register_complete(
            &body.0.challenge_id,
            &body.0.credential,
            installation(&req).as_deref(),
        )
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        "Passkey registered",
        json!({"credentialId": device.credential_id, "deviceId": device.id}),
    ))
}

/// Starts an assertion for a purpose. `context` is what the app must show before the user
/// approves; the challenge is `SHA-256("idconsent-challenge-v1" ‖ nonce ‖ contextHash)`, so the
/// signature commits to it. Challenges live 2 minutes and are single use.
#[utoipa::path(
    tag = "fido",
    request_body = AuthenticateBeginBody,
    responses(
        (status = 200, description = "Request options and context", body = Object),
        (status = 404, description = "Unknown or not enrolled phone, or nothing to approve", body = ErrorBody),
        (status = 409, description = "The object is no longer pending", body = ErrorBody),
        (status = 422, description = "Invalid phone or purpose", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/authenticate/begin")]
pub async fn authenticate_begin(
    context: web::Data<AppContext>,
    body: ApiJson<AuthenticateBeginBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let started = context
        .endusers
        .authenticate_begin(&body.phone, &body.purpose.kind, body.purpose.id)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Show the context, then sign the challenge",
        json!({
            "challengeId": started.challenge_id,
            "publicKey": public_key(started.options),
            "context": started.context,
            "contextHash": started.context_hash,
            "nonce": started.nonce,
        }),
    ))
}

/// Verifies the assertion, then applies `decision` to the consent (mandate, signature) its
/// challenge names, or completes the enrollment, or just authenticates (`login`). Any
/// assertion that does not verify is 401 with an `auth.failed` event.
#[utoipa::path(
    tag = "fido",
    request_body = AuthenticateCompleteBody,
    responses(
        (status = 200, description = "Verified and applied", body = Object),
        (status = 401, description = "The assertion does not verify", body = ErrorBody),
        (status = 409, description = "The object is no longer pending", body = ErrorBody),
        (status = 422, description = "Invalid decision", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/authenticate/complete")]
pub async fn authenticate_complete(
    context: web::Data<AppContext>,
    body: ApiJson<AuthenticateCompleteBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let approve = match body.decision.as_deref() {
        None | Some("approve") => true,
        Some("reject") => false,
        Some(_) => {
            return Err(ApiError::validation(ValidationErrors::single(
                "decision",
                "must be approve or reject",
            )));
        }
    };
    let completed = context
        .endusers
        .authenticate_complete(&body.challenge_id, &body.credential, approve)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Verified",
        json!({
            "verified": true,
            "purpose": completed.purpose.to_json(),
            "status": completed.status,
        }),
    ))
}
