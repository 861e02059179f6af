//! What the hosted pages' handlers use, and nothing else: the hosted approvals service and
//! the limits on calls that send codes — both registered by this area's `register` (ADR 0039),
//! taken together because every step of the page uses the one and the code steps the other.

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use idconsent_hosted::HostedApprovals;
use idconsent_notification::SendLimits;

use crate::http::error::ApiError;
use crate::http::extract::app_data;

#[derive(Debug, Clone)]
pub struct HostedState {
    pub hosted: web::Data<HostedApprovals>,
    pub send_limits: web::Data<SendLimits>,
}

impl HostedState {
    /// Counts a code sent to a page's visitor against the caller's address (CONTRACT §9)
    /// before anything is sent.
    pub async fn admit_code(&self, req: &HttpRequest) -> Result<(), ApiError> {
        crate::http::send_limits::admit(&self.send_limits, req, None).await
    }
}

impl FromRequest for HostedState {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready((|| {
            Ok(HostedState {
                hosted: app_data::<HostedApprovals>(req)?,
                send_limits: app_data::<SendLimits>(req)?,
            })
        })())
    }
}
