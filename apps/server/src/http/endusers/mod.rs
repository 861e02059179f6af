//! The mobile app's API (CONTRACT §2.4 and §3): enrollments, FIDO ceremonies, devices and
//! app tokens. The app is anonymous until it holds an access token; a merchant may create an
//! enrollment with a signed request instead.

mod devices;
mod enrollments;
mod fido;
mod tokens;

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::HeaderName;
use actix_web::{FromRequest, HttpRequest};
use idconsent_enduser::EndUserError;
use idconsent_enduser::ports::AccessClaims;
use utoipa_actix_web::service_config::ServiceConfig;

use idconsent_enduser::EndUserService;

use crate::http::error::ApiError;
use crate::http::extract::{app_data, bearer_token};

pub const DEVICE_ID: HeaderName = HeaderName::from_static("x-device-id");

pub fn routes(config: &mut ServiceConfig) {
    config
        // Paths without parameters first (see `http::routes`).
        .service(fido::authenticate_complete)
        .service(fido::authenticate_begin)
        .service(fido::register_begin)
        .service(fido::register_complete)
        .service(tokens::login)
        .service(tokens::refresh)
        .service(enrollments::create)
        .service(devices::list)
        .service(enrollments::get)
        .service(enrollments::verify)
        .service(enrollments::recovery)
        .service(devices::get)
        .service(devices::delete)
        .service(devices::block);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.endusers))
        .app_data(crate::http::extract::data(&services.send_limits));
}

impl From<EndUserError> for ApiError {
    fn from(error: EndUserError) -> Self {
        match error {
            EndUserError::Invalid(errors) => ApiError::validation(errors),
            EndUserError::RateLimited {
                message,
                retry_after_secs,
            } => ApiError::rate_limited(message, retry_after_secs),
            EndUserError::QuotaExceeded {
                quota,
                retry_after_secs,
            } => ApiError::quota_exceeded(quota, retry_after_secs),
            EndUserError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}

/// The app's `X-Device-ID`, if sent (trimmed; empty counts as absent).
pub fn installation(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get(DEVICE_ID)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// `X-Device-ID`, required: 400 without it.
pub fn required_installation(req: &HttpRequest) -> Result<String, ApiError> {
    installation(req).ok_or_else(|| ApiError::bad_request("Missing X-Device-ID header"))
}

/// An end user signed in to the app: `Authorization: Bearer <access token>` and the
/// `X-Device-ID` the token was issued for, on a device that is still active.
#[derive(Debug, Clone)]
pub struct AppUser(pub AccessClaims);

impl FromRequest for AppUser {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = bearer_token(req).map(str::to_owned);
        let installation = installation(req);
        let endusers = app_data::<EndUserService>(req);
        Box::pin(async move {
            let endusers = endusers?;
            let token = token.ok_or_else(|| ApiError::unauthorized("Missing access token"))?;
            let installation =
                installation.ok_or_else(|| ApiError::bad_request("Missing X-Device-ID header"))?;
            Ok(AppUser(endusers.authorize(&token, &installation).await?))
        })
    }
}
