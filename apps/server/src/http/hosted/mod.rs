//! Hosted approval pages for email recipients (crate `idconsent-hosted`, ADR 0040): one page and
//! one set of JSON steps for every purpose whose objects an email recipient decides, at
//! `{base}/approve/{kind}/{id}` — and at today's URLs, `{base}/mandates/{id}` and
//! `{base}/sign/{id}`. The page shows what the kind's target says to show, confirms the address
//! with an emailed code, makes a passkey in the browser and asserts with it over a challenge
//! committing to the object (when the target requires one), then approves or declines.
//!
//! No authentication but the page token the emailed code buys: the id alone shows the terms (as
//! the emailed link does) and decides nothing.

mod approve;
mod at;
pub mod page;
mod render;
mod state;
mod steps;

use idconsent_approval::PurposeKind;
use idconsent_hosted::HostedError;
use idconsent_mandate::MandateApprovals;
use idconsent_signature::SignatureApprovals;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub use state::HostedState;

/// Today's page URLs, kept as they were emailed: the pages of these kinds.
fn aliases() -> [(&'static str, PurposeKind); 2] {
    [
        ("/mandates", MandateApprovals::KIND),
        ("/sign", SignatureApprovals::KIND),
    ]
}

/// Every step at `/approve/{kind}/{id}…` and at each alias.
pub fn routes(config: &mut ServiceConfig) {
    let mut prefixes = vec![(approve::GENERIC.to_owned(), None)];
    prefixes.extend(
        aliases()
            .into_iter()
            .map(|(path, kind)| (path.to_owned(), Some(kind))),
    );
    for (prefix, kind) in prefixes {
        approve::register(config, &prefix, kind);
    }
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.hosted))
        .app_data(crate::http::extract::data(&services.send_limits));
}

impl From<HostedError> for ApiError {
    fn from(error: HostedError) -> Self {
        use idconsent_kernel::ErrorCategory;
        match error {
            HostedError::NotFound => ApiError::not_found("Not found"),
            HostedError::NotPending(message) => ApiError::new(ErrorCategory::Conflict, message),
            HostedError::TooSoon { retry_after_secs }
            | HostedError::Locked { retry_after_secs } => {
                ApiError::rate_limited(error.to_string(), retry_after_secs)
            }
            HostedError::WrongCode { attempts_left } => ApiError::new(
                ErrorCategory::Unauthorized,
                format!("Wrong or expired code ({attempts_left} attempts left)"),
            ),
            HostedError::NoToken => ApiError::new(ErrorCategory::Unauthorized, error.to_string()),
            HostedError::NoAddress => ApiError::bad_request(error.to_string()),
            HostedError::Passkey(reason) => ApiError::new(
                ErrorCategory::Unauthorized,
                format!("The passkey step did not verify: {reason}"),
            ),
            HostedError::Changed => ApiError::new(ErrorCategory::Conflict, error.to_string())
                .with_details(vec![idconsent_kernel::FieldError::new(
                    "contextHash",
                    "is not what the page shows now; reload the page",
                )]),
            // A stored file is gone: nothing the visitor can do, and the operator must know
            // (410, docs/api-design.md).
            HostedError::Gone => {
                tracing::error!("a hosted page's document is missing from the file store");
                ApiError::gone(error.to_string())
            }
            HostedError::Quota {
                quota,
                retry_after_secs,
            } => ApiError::quota_exceeded(quota, retry_after_secs),
            HostedError::Unavailable(source) => ApiError::failure(&*source),
        }
    }
}
