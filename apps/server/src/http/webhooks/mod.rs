//! Webhook deliveries (CONTRACT §8). Signed requests (S).

mod deliveries;

use utoipa_actix_web::service_config::ServiceConfig;

pub fn routes(config: &mut ServiceConfig) {
    config.service(deliveries::list).service(deliveries::retry);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.webhooks));
}

impl From<idconsent_webhook::DeliveryLogError> for crate::http::error::ApiError {
    fn from(error: idconsent_webhook::DeliveryLogError) -> Self {
        use idconsent_webhook::DeliveryLogError;
        match error {
            DeliveryLogError::Invalid(errors) => Self::validation(errors),
            DeliveryLogError::Unavailable(source) => Self::failure(&source),
            DeliveryLogError::TooManyRetries { retry_after_secs } => {
                Self::rate_limited(error.to_string(), retry_after_secs)
            }
            other => Self::new(other.category(), other.to_string()),
        }
    }
}
