//! Billing (spec §4.12, CONTRACT §7): usage and invoices for signed requests (S) and for the
//! dashboard (merchant JWT); the operator's plan, close-period and mark-paid live in `admin`.

mod dashboard;
mod service;
pub mod views;

use idconsent_billing::BillingError;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(service::usage)
        .service(service::invoices)
        .service(dashboard::usage)
        .service(dashboard::invoices);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.billing));
}

impl From<BillingError> for ApiError {
    fn from(error: BillingError) -> Self {
        match error {
            BillingError::Invalid(errors) => ApiError::validation(errors),
            BillingError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
