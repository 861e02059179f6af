//! OAuth with PKCE (spec §4.2, CONTRACT §5): access requests, status, token exchange, JWKS,
//! userinfo, introspection and revocation.

mod authorize;
mod requests;
mod tokens;

use idconsent_kernel::Timestamp;
use idconsent_oauth::{Claim, Claims, OAuthError, VerificationStatus};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Ref, Schema};
use utoipa::{PartialSchema, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(requests::create)
        .service(requests::status)
        .service(tokens::exchange)
        .service(tokens::jwks)
        .service(tokens::userinfo)
        .service(tokens::introspect)
        .service(tokens::revoke)
        .service(authorize::page)
        .service(authorize::status);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.oauth))
        .app_data(actix_web::web::Data::new(services.page_nonces.clone()));
}

impl From<OAuthError> for ApiError {
    fn from(error: OAuthError) -> Self {
        match error {
            OAuthError::Invalid(errors) => ApiError::validation(errors),
            OAuthError::Consent(inner) => inner.into(),
            OAuthError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}

/// One requested claim as the user shares it (spec §2.2, CONTRACT §5).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimBody {
    /// The verified value, `null` when unavailable. Open on purpose: a string for every claim
    /// today; `address` will be an object once identity verification provides it.
    #[schema(required = true)]
    value: Value,
    verified: bool,
    /// `verified` or `unavailable`.
    verification_status: &'static str,
    /// `sms_otp` or `identity_verification`; absent when unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    verification_source: Option<String>,
    /// Absent when unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime, nullable = false)]
    verified_at: Option<Timestamp>,
}

impl From<&Claim> for ClaimBody {
    fn from(claim: &Claim) -> Self {
        Self {
            value: claim.value.clone(),
            verified: claim.verified,
            verification_status: match claim.verification_status {
                VerificationStatus::Verified => "verified",
                VerificationStatus::Unavailable => "unavailable",
            },
            verification_source: claim.verification_source.clone(),
            verified_at: claim.verified_at,
        }
    }
}

/// The claims object: every requested claim key (`phone_number`, `given_name`, …) with its
/// [`ClaimBody`], in the order the merchant asked for them.
#[derive(Debug)]
pub struct ClaimsBody(Vec<(String, ClaimBody)>);

impl From<&Claims> for ClaimsBody {
    fn from(claims: &Claims) -> Self {
        Self(
            claims
                .iter()
                .map(|(key, claim)| (key.to_owned(), claim.into()))
                .collect(),
        )
    }
}

impl Serialize for ClaimsBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, claim) in &self.0 {
            map.serialize_entry(key, claim)?;
        }
        map.end()
    }
}

impl utoipa::PartialSchema for ClaimsBody {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .description(Some(
                "Every requested claim key (`phone_number`, `given_name`, …) with its claim, in \
                 the order the merchant asked for them.",
            ))
            .additional_properties(Some(Ref::from_schema_name(ClaimBody::name())))
            .into()
    }
}

impl ToSchema for ClaimsBody {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ClaimBody::name().into(), ClaimBody::schema()));
        <ClaimBody as ToSchema>::schemas(schemas);
    }
}
