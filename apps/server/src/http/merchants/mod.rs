//! Merchant onboarding, sign-in and team (spec §4.3, CONTRACT §2.2 and §6). Merchant JWT (J).

mod account;
mod business;
mod documents;
mod go_live;
mod login;
mod register;
mod team;
mod verification;
pub mod views;

use idconsent_kernel::{ErrorCategory, FieldError};
use idconsent_merchant::MerchantError;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(register::register)
        .service(login::login)
        .service(verification::verify_email_link)
        .service(verification::resend_email)
        .service(verification::verify_phone)
        .service(verification::resend_phone)
        .service(account::me)
        .service(business::update_business)
        .service(documents::upload_document)
        .service(go_live::go_live)
        .service(team::invite)
        .service(team::accept)
        .service(team::list)
        .service(team::remove);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.send_limits));
}

impl From<MerchantError> for ApiError {
    fn from(error: MerchantError) -> Self {
        match error {
            MerchantError::Invalid(errors) => ApiError::validation(errors),
            MerchantError::GoLiveBlocked(unmet) => ApiError::new(
                ErrorCategory::Validation,
                "The account does not meet the go-live requirements",
            )
            .with_details(
                unmet
                    .into_iter()
                    .map(|requirement| {
                        FieldError::new(requirement.key(), requirement.description())
                    })
                    .collect(),
            ),
            MerchantError::TooSoon { retry_after_secs }
            | MerchantError::LockedOut { retry_after_secs }
            | MerchantError::Busy { retry_after_secs } => {
                ApiError::rate_limited(error.to_string(), retry_after_secs)
            }
            MerchantError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
