//! What the hosted pages' handlers use, and nothing else: the hosted approvals service and
//! the limits on calls that send codes. Built from the deployment's services in one place.

use std::future::{Ready, ready};
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use idconsent_hosted::HostedApprovals;
use idconsent_notification::{SendLimits, Sender};

use crate::context::AppContext;
use crate::http::error::ApiError;

#[derive(Debug, Clone)]
pub struct HostedState {
    pub hosted: Arc<HostedApprovals>,
    pub send_limits: Arc<SendLimits>,
}

impl HostedState {
    pub fn of(context: &AppContext) -> Self {
        Self {
            hosted: context.hosted.clone(),
            send_limits: context.send_limits.clone(),
        }
    }

    /// Counts a code sent to a page's visitor against the caller's address (CONTRACT §9)
    /// before anything is sent.
    pub async fn admit_code(&self, req: &HttpRequest) -> Result<(), ApiError> {
        let senders: Vec<Sender> = req
            .peer_addr()
            .map(|peer| Sender::Ip(peer.ip().to_string()))
            .into_iter()
            .collect();
        Ok(self.send_limits.admit(&senders).await?)
    }
}

impl FromRequest for HostedState {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            req.app_data::<web::Data<AppContext>>()
                .map(|context| HostedState::of(context))
                .ok_or_else(|| ApiError::internal("application context missing")),
        )
    }
}
