//! Webhook deliveries (CONTRACT §8). Signed requests (S).

mod deliveries;

use utoipa_actix_web::service_config::ServiceConfig;

pub fn routes(config: &mut ServiceConfig) {
    config.service(deliveries::list).service(deliveries::retry);
}
