//! Wiring: builds every adapter and domain service once and shares them with the handlers.

use std::sync::Arc;

use idconsent_kernel::{Clock, IdGenerator, OsRandom, RandomSource, SystemClock, UlidGenerator};
use idconsent_notification::{
    Channel, Dispatcher, MessageStore, MessageTransport, Notifier, Nudge, RetryPolicy,
};
use idconsent_notify::{DevMailbox, HttpSms, HttpSmsConfig, SmtpEmail};
use idconsent_store_diesel::{Db, DieselMessageStore};
use secrecy::ExposeSecret;
use tokio::sync::Notify;

use crate::config::{Config, Mode};
use crate::http::metrics::Metrics;
use crate::http::openapi::ApiDocs;

/// Everything a handler or worker may use. Cloned cheaply (all `Arc`s).
#[derive(Debug)]
pub struct AppContext {
    pub config: Arc<Config>,
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub random: Arc<dyn RandomSource>,
    pub messages: Arc<dyn MessageStore>,
    pub notifier: Arc<Notifier>,
    pub dispatcher: Arc<Dispatcher>,
    pub metrics: Arc<Metrics>,
    pub docs: Arc<ApiDocs>,
    pub wake: Wake,
}

/// Wakes background workers when there is new work, so nothing waits for the next poll.
#[derive(Debug, Clone, Default)]
pub struct Wake {
    pub notifications: Arc<Notify>,
}

#[derive(Debug)]
struct NotifyNudge(Arc<Notify>);

impl Nudge for NotifyNudge {
    fn nudge(&self) {
        self.0.notify_one();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    #[error(transparent)]
    Smtp(#[from] idconsent_notify::SmtpConfigError),
    #[error(transparent)]
    Sms(#[from] idconsent_notify::HttpSmsConfigError),
}

impl AppContext {
    pub fn build(config: Config, db: Db) -> Result<Self, WiringError> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
        let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), random.clone()));
        let wake = Wake::default();

        let messages: Arc<dyn MessageStore> = Arc::new(DieselMessageStore::new(db.clone()));
        let notifier = Arc::new(Notifier::new(
            messages.clone(),
            clock.clone(),
            ids.clone(),
            Some(Arc::new(NotifyNudge(wake.notifications.clone()))),
        ));
        let dispatcher = Arc::new(Dispatcher::new(
            messages.clone(),
            transports(&config)?,
            clock.clone(),
            RetryPolicy::default(),
        ));

        Ok(Self {
            docs: Arc::new(ApiDocs::build(config.mode)),
            config: Arc::new(config),
            db,
            clock,
            ids,
            random,
            messages,
            notifier,
            dispatcher,
            metrics: Arc::new(Metrics::new()),
            wake,
        })
    }
}

/// Dev mode delivers every channel to the dev mailbox; production uses what is configured and
/// leaves the rest queued.
fn transports(config: &Config) -> Result<Vec<Arc<dyn MessageTransport>>, WiringError> {
    let timeout = std::time::Duration::from_secs(30);
    if config.mode == Mode::Dev {
        return Ok(Channel::ALL
            .into_iter()
            .map(|channel| Arc::new(DevMailbox::new(channel)) as Arc<dyn MessageTransport>)
            .collect());
    }
    let mut transports: Vec<Arc<dyn MessageTransport>> = Vec::new();
    if let Some(smtp) = &config.smtp {
        transports.push(Arc::new(SmtpEmail::new(
            smtp.url.expose_secret(),
            &smtp.from,
            timeout,
        )?));
    }
    if let Some(sms) = &config.sms {
        transports.push(Arc::new(HttpSms::new(&HttpSmsConfig {
            url: sms.url.clone(),
            auth_header: sms
                .auth_header
                .as_ref()
                .map(|h| h.expose_secret().to_owned()),
            timeout,
        })?));
    }
    Ok(transports)
}
