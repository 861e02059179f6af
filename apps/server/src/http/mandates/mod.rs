//! Digital mandates (spec §4.8, CONTRACT §7): signed requests (S) and the sandbox helpers.

mod change;
mod create;
mod read;
mod sandbox;

use idconsent_access::Caller;
use idconsent_kernel::Timestamp;
use idconsent_mandate::{Mandate, MandateBody, MandateError, MandateService, Requester};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(create::create)
        .service(read::list)
        .service(read::get)
        .service(change::change)
        .service(change::cancel)
        .service(sandbox::approve)
        .service(sandbox::reject);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.mandates));
}

/// The application behind a signed request, in the mandate domain's terms.
pub fn requester(caller: &Caller) -> Requester {
    let application = &caller.application;
    Requester {
        application_id: application.id.clone(),
        environment: caller.environment,
        default_callback_url: Some(application.callback_url.as_str().to_owned()),
    }
}

impl From<MandateError> for ApiError {
    fn from(error: MandateError) -> Self {
        match error {
            MandateError::Invalid(errors) => ApiError::validation(errors),
            MandateError::QuotaExceeded {
                quota,
                retry_after_secs,
            } => ApiError::quota_exceeded(quota, retry_after_secs),
            MandateError::Limited {
                message,
                retry_after_secs,
            } => ApiError::rate_limited(message, retry_after_secs),
            MandateError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}

/// A mandate (spec §2.5). `mandate.signed` carries the same fields but `approvalUrl`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MandateView {
    /// `md_…`
    id: String,
    /// `pending_authorization`, `active`, `cancelled` or `expired`.
    status: &'static str,
    /// The E.164 phone or the email address asked.
    recipient: String,
    /// `direct_debit`, `standing_order` or `authorization`.
    #[serde(rename = "type")]
    kind: &'static str,
    /// The maximum amount in major units; `null` when none.
    #[schema(required = true)]
    amount: Option<f64>,
    /// ISO 4217.
    currency: String,
    /// `daily`, `weekly`, `monthly` or `yearly`; `null` when none.
    #[schema(required = true)]
    frequency: Option<&'static str>,
    description: String,
    /// Where `mandate.signed` goes (the application's callback URL unless one was given).
    #[schema(required = true)]
    callback_url: Option<String>,
    /// While changed terms await re-authorisation: the terms authorised before.
    #[schema(required = true)]
    authorized_terms: Option<TermsView>,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    updated_at: Timestamp,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    authorized_at: Option<Timestamp>,
    /// When a pending authorisation lapses (7 days after it was asked); `null` unless pending.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    authorization_expires_at: Option<Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    cancelled_at: Option<Timestamp>,
    /// Email recipients only: the hosted page where they confirm their address and approve.
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_url: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TermsView {
    #[schema(required = true)]
    amount: Option<f64>,
    currency: String,
    #[schema(required = true)]
    frequency: Option<&'static str>,
}

impl MandateView {
    /// `mandate` as of now, from the domain's body so the API and the webhook agree.
    pub fn of(mandate: &Mandate, mandates: &MandateService) -> Self {
        let body = MandateBody::of(mandate, mandates.now());
        Self {
            id: body.id.to_string(),
            status: body.status,
            recipient: body.recipient.to_owned(),
            kind: body.kind,
            amount: body.amount,
            currency: body.currency.to_owned(),
            frequency: body.frequency,
            description: body.description.to_owned(),
            callback_url: body.callback_url.map(str::to_owned),
            authorized_terms: body.authorized_terms.map(|terms| TermsView {
                amount: terms.amount,
                currency: terms.currency.to_owned(),
                frequency: terms.frequency,
            }),
            created_at: body.created_at,
            updated_at: body.updated_at,
            authorized_at: body.authorized_at,
            authorization_expires_at: body.authorization_expires_at,
            cancelled_at: body.cancelled_at,
            approval_url: mandates.page_url(mandate),
        }
    }
}
