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

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::config::{Config, Mode};
use crate::health::DatabaseHealth;
use crate::wiring::{RequestIds, Services};
use error::ApiError;
use extract::{OperatorToken, data};
use metrics::Metrics;
use openapi::ApiDocs;

/// What the whole app shares, not any one area: the request middleware's ids and metrics, the
/// API document (the fallback's 404/405), readiness, and the configuration.
#[derive(Debug, Clone)]
pub struct AppData {
    pub config: Arc<Config>,
    pub docs: web::Data<ApiDocs>,
    pub metrics: web::Data<Metrics>,
    pub health: web::Data<DatabaseHealth>,
    pub request_ids: web::Data<RequestIds>,
}

impl AppData {
    pub fn register(&self, config: &mut web::ServiceConfig) {
        config
            .app_data(web::Data::from(self.config.clone()))
            .app_data(web::Data::new(OperatorToken(
                self.config.admin_token.clone(),
            )))
            .app_data(self.docs.clone())
            .app_data(self.metrics.clone())
            .app_data(self.health.clone())
            .app_data(self.request_ids.clone());
    }
}

/// Each area registers the services its handlers take; the doors every area passes — signed
/// requests (the request gate) and merchant sessions (the merchant service) — are registered
/// once here.
pub fn register(config: &mut web::ServiceConfig, services: &Services) {
    config
        .app_data(data(&services.requests))
        .app_data(data(&services.merchants));
    system::register(config, services);
    notifications::register(config, services);
    oauth::register(config, services);
    oidc::register(config, services);
    consents::register(config, services);
    mandates::register(config, services);
    billing::register(config, services);
    hosted::register(config, services);
    signatures::register(config, services);
    identity::register(config, services);
    endusers::register(config, services);
    webhooks::register(config, services);
    qr::register(config, services);
    merchants::register(config, services);
    admin::register(config, services);
}

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
pub async fn fallback(request: HttpRequest, docs: web::Data<ApiDocs>) -> HttpResponse {
    let allowed = docs.allowed_methods(request.path());
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
