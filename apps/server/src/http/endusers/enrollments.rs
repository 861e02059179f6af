use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use idconsent_enduser::EndUserService;
use idconsent_enduser::{Audience, EnrollRequest, Enrollment};
use idconsent_kernel::Timestamp;
use idconsent_notification::SendLimits;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{installation, required_installation};

use crate::http::auth::{API_KEY, Signed};
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;
use crate::http::send_limits;

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

/// A started enrollment, waiting for the SMS code.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnrollmentStarted {
    /// `enr_…`
    enrollment_id: String,
    phone: String,
    /// `pending_otp`.
    status: &'static str,
    /// When the code stops working (10 minutes).
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
}

/// An enrollment as the app that started it, or the application that created it, reads it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnrollmentBody {
    /// `enr_…`
    enrollment_id: String,
    phone: String,
    /// `pending_otp`, `passkey_registered`, `completed` or `failed`.
    status: &'static str,
    /// Self-asserted, never presented as verified.
    #[schema(required = true)]
    name: Option<String>,
    #[schema(required = true)]
    device_name: Option<String>,
    #[schema(required = true)]
    platform: Option<String>,
    /// `dev_…` once a passkey is registered.
    #[schema(required = true)]
    device_id: Option<String>,
    /// When the SMS code stops working, while one is awaited (`pending_otp`); else `null`.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    expires_at: Option<Timestamp>,
    /// The awaited code has expired: start a new enrollment.
    code_expired: bool,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    updated_at: Timestamp,
}

impl EnrollmentBody {
    fn of(enrollment: &Enrollment, now: Timestamp) -> Self {
        Self {
            enrollment_id: enrollment.id.to_string(),
            phone: enrollment.phone.to_string(),
            status: enrollment.status.as_str(),
            name: enrollment.name.clone(),
            device_name: enrollment.device_name.clone(),
            platform: enrollment.platform.clone(),
            device_id: enrollment.device_id.as_ref().map(ToString::to_string),
            expires_at: enrollment.code_expires_at(),
            code_expired: enrollment.code_expired_at(now),
            created_at: enrollment.created_at,
            updated_at: enrollment.updated_at,
        }
    }
}

/// Starts an enrollment and texts a 6-digit code (valid 10 minutes, 5 attempts). From the app
/// anonymously (`X-Device-ID` required), or from a merchant with a signed request — then that
/// application receives the enrollment's events.
#[utoipa::path(
    tag = "enrollments",
    request_body = EnrollBody,
    params(("X-Device-ID" = String, Header, description = "The app installation")),
    responses(
        (status = 201, description = "Code sent", body = Envelope<EnrollmentStarted>),
        (status = 400, description = "Malformed body or no X-Device-ID", body = ErrorBody),
        (status = 401, description = "A signed request that does not verify", body = ErrorBody),
        (status = 422, description = "Invalid phone", body = ErrorBody),
        (status = 429, description = "Too many enrollments for this phone, or too many codes requested from this client or overall; see Retry-After", body = ErrorBody)
    )
)]
#[post("/v1/enrollments")]
pub async fn create(
    endusers: web::Data<EndUserService>,
    send_limits: web::Data<SendLimits>,
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
    send_limits::admit(
        &send_limits,
        &req,
        audience.as_ref().map(|a| a.application_id.as_str()),
    )
    .await?;
    let enrollment = endusers
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
        EnrollmentStarted {
            enrollment_id: enrollment.id.to_string(),
            phone: enrollment.phone.to_string(),
            status: enrollment.status.as_str(),
            expires_at: enrollment.otp_expires_at,
        },
    ))
}

/// An enrollment's status, for the app that started it (same `X-Device-ID`) or the
/// application that created it (signed request); anyone else gets 404.
#[utoipa::path(
    tag = "enrollments",
    params(("id" = String, Path, description = "`enr_…`")),
    responses(
        (status = 200, description = "The enrollment", body = Envelope<EnrollmentBody>),
        (status = 404, description = "Unknown, or not yours", body = ErrorBody)
    )
)]
#[get("/v1/enrollments/{id}")]
pub async fn get(
    endusers: web::Data<EndUserService>,
    req: HttpRequest,
    payload: web::Payload,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let enrollment = endusers.enrollment(&id).await?;
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
        EnrollmentBody::of(&enrollment, endusers.now()),
    ))
}

/// Completes an enrollment with an assertion made for purpose `enrollment`: the user is now
/// enrolled for every merchant (event `enrollment.completed`).
#[utoipa::path(
    tag = "enrollments",
    request_body = VerifyBody,
    params(("id" = String, Path, description = "`enr_…`")),
    responses(
        (status = 200, description = "Completed", body = Envelope<EnrollmentBody>),
        (status = 401, description = "The assertion does not verify", body = ErrorBody),
        (status = 409, description = "Not awaiting verification", body = ErrorBody)
    )
)]
#[post("/v1/enrollments/{id}/verify")]
pub async fn verify(
    endusers: web::Data<EndUserService>,
    id: web::Path<String>,
    body: ApiJson<VerifyBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let enrollment = endusers
        .verify_enrollment(&id, &body.challenge_id, &body.credential)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Enrollment completed",
        EnrollmentBody::of(&enrollment, endusers.now()),
    ))
}

/// The device of this enrollment waits for approval, and the user has no device left to give
/// it: starts a recovery. The device becomes active after the cooling-off period (72 hours by
/// default) unless one of the user's devices rejects it; the phone gets an SMS and every
/// application that enrolled one of its devices gets `device.recovery_started`. Only the
/// installation that made the enrollment (`X-Device-ID`) may ask.
#[utoipa::path(
    tag = "enrollments",
    params(("id" = String, Path, description = "`enr_…`")),
    responses(
        (status = 202, description = "Recovery started", body = Envelope<crate::http::endusers::devices::DeviceBody>),
        (status = 400, description = "Missing X-Device-ID", body = ErrorBody),
        (status = 404, description = "Unknown, or not this installation's", body = ErrorBody),
        (status = 409, description = "No pending device, or a recovery already under way", body = ErrorBody)
    )
)]
#[post("/v1/enrollments/{id}/recovery")]
pub async fn recovery(
    endusers: web::Data<EndUserService>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let installation = super::required_installation(&req)?;
    let device = endusers.start_recovery(&id, &installation).await?;
    Ok(respond(
        StatusCode::ACCEPTED,
        "Recovery started",
        crate::http::endusers::devices::DeviceBody::from(&device),
    ))
}
