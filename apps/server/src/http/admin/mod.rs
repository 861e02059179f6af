//! The platform operator's endpoints (CONTRACT §2.3): `Authorization: Bearer <IDC_ADMIN_TOKEN>`.

mod billing;
mod merchants;
mod oauth_keys;

use utoipa_actix_web::service_config::ServiceConfig;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(merchants::list)
        .service(merchants::get)
        .service(merchants::approve)
        .service(merchants::reject)
        .service(billing::set_plan)
        .service(billing::close_period)
        .service(billing::mark_paid)
        .service(oauth_keys::list)
        .service(oauth_keys::rotate);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.billing))
        .app_data(crate::http::extract::data(&services.oauth_keys));
}
