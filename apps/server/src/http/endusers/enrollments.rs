use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use idconsent_enduser::{Audience, EnrollRequest};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::{installation, required_installation};
use crate::context::AppContext;
use crate::http::auth::{API_KEY, Signed};
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnrollBody {
    /// E.164 phone number; receives a 6-digit code by SMS.
    phone: String,
    name: Option<String>,
    device_name: Option<String>,
    /// e.g. `ios`, `android`.
    platform: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyBody {
    /// From `/v1/auth/fido/authenticate/begin` with purpose `enrollment`.
    challenge_id: String,
    /// The WebAuthn assertion (`PublicKeyCredential` JSON).
    #[schema(value_type = Object)]
    credential: Value,
}

/// Starts an enrollment and texts a 6-digit code (valid 10 minutes, 5 attempts). From the app
/// anonymously (`X-Device-ID` required), or from a merchant with a signed request — then that
/// application receives the enrollment's events.
#[utoipa::path(
    tag = "enrollments",
    request_body = EnrollBody,
    params(("X-Device-ID" = String, Header, description = "The app installation")),
    responses(
        (status = 201, description = "Code sent", body = Object),
        (status = 400, description = "Malformed body or no X-Device-ID", body = ErrorBody),
        (status = 401, description = "A signed request that does not verify", body = ErrorBody),
        (status = 422, description = "Invalid phone", body = ErrorBody)
    )
)]
#[post("/v1/enrollments")]
pub async fn create(
    context: web::Data<AppContext>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let device = required_installation(&req)?;
    let mut payload = payload.into_inner();
    // A merchant's call is signed; the app's is anonymous.
    let (body, audience): (EnrollBody, Option<Audience>) = if req.headers().contains_key(API_KEY) {
        let signed = <Signed as actix_web::FromRequest>::from_request(&req, &mut payload).await?;
        let application = &signed.caller.application;
        let audience = Audience {
            application_id: application.id.clone(),
            environment: signed.caller.environment,
            callback_url: application.callback_url.to_string(),
        };
        (signed.json()?, Some(audience))
    } else {
        let ApiJson(body) =
            <ApiJson<EnrollBody> as actix_web::FromRequest>::from_request(&req, &mut payload)
                .await?;
        (body, None)
    };
    let enrollment = context
        .endusers
        .enroll(
            EnrollRequest {
                phone: body.phone,
                name: body.name,
                device_name: body.device_name,
                platform: body.platform,
            },
            &device,
            audience,
        )
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        "Enrollment started; a code was sent by SMS",
        json!({
            "enrollmentId": enrollment.id,
            "phone": enrollment.phone.as_str(),
            "status": enrollment.status.as_str(),
            "expiresAt": enrollment.otp_expires_at.to_rfc3339(),
        }),
    ))
}

/// An enrollment's status, for the app that started it (same `X-Device-ID`) or the
/// application that created it (signed request); anyone else gets 404.
#[utoipa::path(
    tag = "enrollments",
    params(("id" = String, Path, description = "`enr_…`")),
    responses(
        (status = 200, description = "The enrollment", body = Object),
        (status = 404, description = "Unknown, or not yours", body = ErrorBody)
    )
)]
#[get("/v1/enrollments/{id}")]
pub async fn get(
    context: web::Data<AppContext>,
    req: HttpRequest,
    payload: web::Payload,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let enrollment = context.endusers.enrollment(&id).await?;
    let visible = if req.headers().contains_key(API_KEY) {
        let mut payload = payload.into_inner();
        let signed = <Signed as actix_web::FromRequest>::from_request(&req, &mut payload).await?;
        enrollment.audience.as_ref().is_some_and(|audience| {
            audience.application_id == signed.caller.application.id
                && audience.environment == signed.caller.environment
        })
    } else {
        installation(&req).is_some_and(|device| device == enrollment.installation)
    };
    if !visible {
        return Err(ApiError::not_found("Enrollment not found"));
    }
    Ok(respond(
        StatusCode::OK,
        "Enrollment",
        enrollment.to_json(context.clock.now()),
    ))
}

/// Completes an enrollment with an assertion made for purpose `enrollment`: the user is now
/// enrolled for every merchant (event `enrollment.completed`).
#[utoipa::path(
    tag = "enrollments",
    request_body = VerifyBody,
    params(("id" = String, Path, description = "`enr_…`")),
    responses(
        (status = 200, description = "Completed", body = Object),
        (status = 401, description = "The assertion does not verify", body = ErrorBody),
        (status = 409, description = "Not awaiting verification", body = ErrorBody)
    )
)]
#[post("/v1/enrollments/{id}/verify")]
pub async fn verify(
    context: web::Data<AppContext>,
    id: web::Path<String>,
    body: ApiJson<VerifyBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let enrollment = context
        .endusers
        .verify_enrollment(&id, &body.challenge_id, &body.credential)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Enrollment completed",
        enrollment.to_json(context.clock.now()),
    ))
}
