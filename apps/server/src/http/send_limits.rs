//! The calls that make us send an SMS or an email code count against their client's and the
//! global allowance (CONTRACT §9) before the service runs: a refused call sends nothing.

use actix_web::HttpRequest;
use idconsent_notification::{SendLimitError, SendLimits, Sender};

use crate::http::error::ApiError;

impl From<SendLimitError> for ApiError {
    fn from(error: SendLimitError) -> Self {
        match error {
            SendLimitError::Limited {
                message,
                retry_after_secs,
            } => ApiError::rate_limited(message, retry_after_secs),
            SendLimitError::Unavailable(source) => ApiError::failure(&source),
        }
    }
}

/// Counts one sending call for the caller's address and, for a signed call, its application.
pub async fn admit(
    send_limits: &SendLimits,
    req: &HttpRequest,
    application: Option<&str>,
) -> Result<(), ApiError> {
    let mut senders = Vec::with_capacity(2);
    if let Some(peer) = req.peer_addr() {
        senders.push(Sender::Ip(peer.ip().to_string()));
    }
    if let Some(application) = application {
        senders.push(Sender::Application(application.to_owned()));
    }
    Ok(send_limits.admit(&senders).await?)
}
