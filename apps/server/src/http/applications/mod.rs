//! Merchant applications and their credentials (spec §2.3, CONTRACT §6). Merchant JWT (J).

mod create;
mod read;
mod rotate;
mod update;
pub mod views;

use utoipa_actix_web::service_config::ServiceConfig;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(create::create)
        .service(read::list)
        .service(read::get)
        .service(update::update)
        .service(rotate::rotate_key)
        .service(rotate::rotate_webhook_secret)
        .service(rotate::rotate_secret);
}
