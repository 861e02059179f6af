//! Limits on the calls that make us send an SMS or an email code (CONTRACT §9): each client — an
//! IP address, an application — at most `per_client` an hour, and everyone together at most
//! `global` a minute. They bound what anyone can make the service send (and spend) and slow the
//! guessing of codes; a refused call sends nothing.

use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::throttle::window_start;
use idconsent_kernel::{Clock, Throttle, ThrottleError, Timestamp};

/// Who is asking: counted separately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    /// The caller's IP address.
    Ip(String),
    /// The application of a signed request.
    Application(String),
}

impl Sender {
    fn key(&self) -> String {
        match self {
            Sender::Ip(ip) => format!("sends:ip:{ip}"),
            Sender::Application(id) => format!("sends:app:{id}"),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct SendLimitSettings {
    /// Calls per client per hour (`IDC_SMS_LIMIT_PER_CLIENT`).
    pub per_client: u64,
    /// Calls per minute, all clients together (`IDC_SMS_LIMIT_GLOBAL`).
    pub global: u64,
}

impl Default for SendLimitSettings {
    fn default() -> Self {
        Self {
            per_client: 30,
            global: 600,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SendLimitError {
    #[error("{message}")]
    Limited {
        message: &'static str,
        retry_after_secs: u64,
    },
    #[error("send limits are unavailable")]
    Unavailable(#[from] ThrottleError),
}

const HOUR: Duration = Duration::from_secs(3600);
const MINUTE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
pub struct SendLimits {
    throttle: Arc<dyn Throttle>,
    clock: Arc<dyn Clock>,
    settings: SendLimitSettings,
}

impl SendLimits {
    pub fn new(
        throttle: Arc<dyn Throttle>,
        clock: Arc<dyn Clock>,
        settings: SendLimitSettings,
    ) -> Self {
        Self {
            throttle,
            clock,
            settings,
        }
    }

    /// Counts one sending call for each of `senders` and for everyone; refused when any of them
    /// is at its limit. A refusal after an earlier counter was taken leaves that count in
    /// place: a refused burst only ever counts more, never less.
    pub async fn admit(&self, senders: &[Sender]) -> Result<(), SendLimitError> {
        let now = self.clock.now();
        let minute = window_start(now, MINUTE);
        if !self
            .throttle
            .take("sends:global", minute, self.settings.global)
            .await?
        {
            return Err(limited(
                "The service is sending too many codes right now; try again shortly",
                minute.plus(MINUTE),
                now,
            ));
        }
        let hour = window_start(now, HOUR);
        for sender in senders {
            if !self
                .throttle
                .take(&sender.key(), hour, self.settings.per_client)
                .await?
            {
                return Err(limited(
                    "Too many codes requested from here; try again later",
                    hour.plus(HOUR),
                    now,
                ));
            }
        }
        Ok(())
    }

    /// Deletes counters older than a day.
    pub async fn forget_old(&self) -> Result<u64, ThrottleError> {
        self.throttle
            .forget_before(self.clock.now().minus(Duration::from_secs(24 * 3600)))
            .await
    }
}

fn limited(message: &'static str, until: Timestamp, now: Timestamp) -> SendLimitError {
    SendLimitError::Limited {
        message,
        retry_after_secs: until.since(now).as_secs().max(1),
    }
}
