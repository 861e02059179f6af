use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_enduser::DeviceStatus;
use idconsent_enduser::EndUserService;
use idconsent_enduser::Purpose;
use idconsent_kernel::ValidationErrors;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::installation;

use crate::http::envelope::{Envelope, respond};
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
pub struct RegisterCompleteBody {
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
    /// The WebAuthn assertion (`PublicKeyCredential` JSON, base64url binary fields).
    #[schema(value_type = Object)]
    credential: Value,
    /// `approve` (default) or `reject`, for consent, mandate and signature purposes.
    decision: Option<String>,
}

/// Options for a new passkey.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationOptions {
    /// `chl_…`, for `register/complete`.
    challenge_id: String,
    /// W3C WebAuthn `PublicKeyCredentialCreationOptionsJSON` (binary fields base64url). Open on
    /// purpose: made by the WebAuthn library and handed unchanged to the authenticator.
    #[schema(value_type = Object)]
    public_key: Value,
}

/// A registered passkey and its device.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredPasskey {
    /// base64url.
    credential_id: String,
    /// `dev_…`
    device_id: String,
    /// `active` for the phone's first device; `pending` when the phone already has devices:
    /// one of them must approve it (purpose `device_add`), or a recovery must run its course
    /// (`POST /v1/enrollments/:id/recovery`).
    status: &'static str,
}

/// A started assertion: what to show, what to sign.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssertionOptions {
    /// `chl_…`, for `authenticate/complete` (or `/v6/auth/login`, `/v1/enrollments/{id}/verify`).
    challenge_id: String,
    /// W3C WebAuthn `PublicKeyCredentialRequestOptionsJSON` (binary fields base64url). Open on
    /// purpose: made by the WebAuthn library and handed unchanged to the authenticator.
    #[schema(value_type = Object)]
    public_key: Value,
    /// What the app must show before the user approves. Open on purpose: its fields depend on
    /// the purpose (consent: `{type, sessionId, merchant, application, environment, intent,
    /// transaction, expiresAt}` and, for OAuth, `claims`, `scopes`, `description`; enrollment:
    /// `{type, enrollmentId, phone}`; login: `{type, phone}`; every approvable domain adds
    /// its own), and the app hashes it exactly as sent.
    #[schema(value_type = Object)]
    context: Value,
    /// Hex SHA-256 of the context's canonical JSON (keys sorted at every level, no whitespace).
    context_hash: String,
    /// Hex, 32 bytes: `publicKey.challenge = SHA-256("idconsent-challenge-v1" ‖ nonce ‖ contextHash)`.
    nonce: String,
}

/// What a challenge was for.
#[derive(Debug, Serialize, ToSchema)]
pub struct PurposeView {
    /// `login`, `enrollment`, `consent`, `mandate` or `signature`.
    #[serde(rename = "type")]
    kind: String,
    /// The enrollment, session, mandate or signature request; `null` for `login`.
    #[schema(required = true)]
    id: Option<String>,
}

impl From<&Purpose> for PurposeView {
    fn from(purpose: &Purpose) -> Self {
        Self {
            kind: purpose.kind.to_string(),
            id: purpose.id.clone(),
        }
    }
}

/// A verified assertion and what it did.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssertionResult {
    /// Always `true` (a refused assertion is a 401).
    verified: bool,
    purpose: PurposeView,
    /// The object's status afterwards: `approved`, `rejected`, `completed` (enrollment) or
    /// `authenticated` (login).
    status: String,
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
        (status = 200, description = "Creation options", body = Envelope<RegistrationOptions>),
        (status = 400, description = "Invalid or expired code", body = ErrorBody),
        (status = 404, description = "Unknown enrollment", body = ErrorBody),
        (status = 409, description = "The enrollment already has a passkey", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/register/begin")]
pub async fn register_begin(
    endusers: web::Data<EndUserService>,
    body: ApiJson<RegisterBeginBody>,
) -> Result<HttpResponse, ApiError> {
    let (challenge_id, options) = endusers
        .register_begin(&body.0.enrollment_id, &body.0.otp)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Create a passkey with these options",
        RegistrationOptions {
            challenge_id: challenge_id.to_string(),
            public_key: public_key(options),
        },
    ))
}

/// Verifies the new passkey and registers the device (event `device.registered`).
#[utoipa::path(
    tag = "fido",
    request_body = RegisterCompleteBody,
    responses(
        (status = 201, description = "Registered", body = Envelope<RegisteredPasskey>),
        (status = 400, description = "Malformed credential", body = ErrorBody),
        (status = 401, description = "The credential does not verify, or the challenge is spent", body = ErrorBody),
        (status = 409, description = "Passkey already registered", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/register/complete")]
pub async fn register_complete(
    endusers: web::Data<EndUserService>,
    req: HttpRequest,
    body: ApiJson<RegisterCompleteBody>,
) -> Result<HttpResponse, ApiError> {
    let device = endusers
        .register_complete(
            &body.0.challenge_id,
            &body.0.credential,
            installation(&req).as_deref(),
        )
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        if device.status == DeviceStatus::Pending {
            "Passkey registered; one of your other devices must approve this one"
        } else {
            "Passkey registered"
        },
        RegisteredPasskey {
            credential_id: device.credential_id,
            device_id: device.id.to_string(),
            status: device.status.as_str(),
        },
    ))
}

/// Starts an assertion for a purpose. `context` is what the app must show before the user
/// approves; the challenge is `SHA-256("idconsent-challenge-v1" ‖ nonce ‖ contextHash)`, so the
/// signature commits to it. Challenges live 2 minutes and are single use.
#[utoipa::path(
    tag = "fido",
    request_body = AuthenticateBeginBody,
    responses(
        (status = 200, description = "Request options and context", body = Envelope<AssertionOptions>),
        (status = 404, description = "Unknown or not enrolled phone, or nothing to approve", body = ErrorBody),
        (status = 409, description = "The object is no longer pending", body = ErrorBody),
        (status = 422, description = "Invalid phone or purpose", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/authenticate/begin")]
pub async fn authenticate_begin(
    endusers: web::Data<EndUserService>,
    body: ApiJson<AuthenticateBeginBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let started = endusers
        .authenticate_begin(&body.phone, &body.purpose.kind, body.purpose.id)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Show the context, then sign the challenge",
        AssertionOptions {
            challenge_id: started.challenge_id.to_string(),
            public_key: public_key(started.options),
            context: started.context,
            context_hash: started.context_hash,
            nonce: started.nonce,
        },
    ))
}

/// Verifies the assertion, then applies `decision` to the consent (mandate, signature) its
/// challenge names, or completes the enrollment, or just authenticates (`login`). Any
/// assertion that does not verify is 401 with an `auth.failed` event.
#[utoipa::path(
    tag = "fido",
    request_body = AuthenticateCompleteBody,
    responses(
        (status = 200, description = "Verified and applied", body = Envelope<AssertionResult>),
        (status = 401, description = "The assertion does not verify", body = ErrorBody),
        (status = 409, description = "The object is no longer pending", body = ErrorBody),
        (status = 422, description = "Invalid decision", body = ErrorBody)
    )
)]
#[post("/v1/auth/fido/authenticate/complete")]
pub async fn authenticate_complete(
    endusers: web::Data<EndUserService>,
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
    let completed = endusers
        .authenticate_complete(&body.challenge_id, &body.credential, approve)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Verified",
        AssertionResult {
            verified: true,
            purpose: PurposeView::from(&completed.purpose),
            status: completed.status,
        },
    ))
}
