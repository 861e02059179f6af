//! The HTTP layer: handlers translate HTTP to domain calls and back, nothing more.

mod admin;
mod applications;
pub mod auth;
mod billing;
pub mod consents;
pub mod endusers;
pub mod envelope;
pub mod error;
pub mod extract;
pub mod hosted;
mod identity;
mod mandates;
pub mod merchants;
pub mod metrics;
pub mod middleware;
mod notifications;
mod oauth;
mod oidc;
pub mod openapi;
mod qr;
mod reference;
pub mod send_limits;
mod signatures;
mod system;
mod webhooks;

use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::config::Mode;
use crate::context::AppContext;
use error::ApiError;

/// Every route. The OpenAPI document is collected from exactly this list, so a route cannot be
/// served without being documented.
///
/// actix tries routes in this order, and each route with a path parameter it passes on the way
/// costs a regex run (about half a microsecond): the modules of the busiest paths (token
/// exchange, consent creation, passkey approval) come first, each with its parameterless
/// paths ahead of the others (docs/performance.md).
pub fn routes(config: &mut ServiceConfig, mode: Mode) {
    config
        .service(system::healthz)
        .service(system::readyz)
        .service(system::metrics)
        .service(system::openapi_json)
        .service(system::docs)
        .service(notifications::send_test_message)
        .configure(oauth::routes)
        .configure(oidc::routes)
        .configure(consents::routes)
        .configure(mandates::routes)
        .configure(billing::routes)
        .configure(hosted::routes)
        .configure(signatures::routes)
        .configure(identity::routes)
        .configure(endusers::routes)
        .configure(webhooks::routes)
        .configure(qr::routes)
        .configure(merchants::routes)
        .configure(applications::routes)
        .configure(admin::routes);
    // Development-only routes do not exist at all in production (404, absent from the docs).
    if mode == Mode::Dev {
        config.service(notifications::dev_messages);
    }
}

/// Extractor settings so actix's own failures use the envelope too.
pub fn extractor_configs(config: &mut web::ServiceConfig) {
    config
        .app_data(web::QueryConfig::default().error_handler(|error, _| {
            ApiError::bad_request(format!("Invalid query string: {error}")).into()
        }))
        .app_data(
            web::PathConfig::default()
                .error_handler(|_, _| ApiError::not_found("Not found").into()),
        );
}

/// Anything no route matched: 405 when the path exists with other methods, else 404.
pub async fn fallback(request: HttpRequest, context: web::Data<AppContext>) -> HttpResponse {
    let allowed = context.docs.allowed_methods(request.path());
    let error = if allowed.is_empty() {
        ApiError::not_found(format!(
            "No route for {} {}",
            request.method(),
            request.path()
        ))
    } else {
        ApiError::method_not_allowed(&allowed)
    };
    error.error_response()
}
