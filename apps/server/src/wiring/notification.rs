//! Outgoing SMS and email: the outbox, its dispatcher and the transports per channel.

use std::sync::Arc;
use std::time::Duration;

use idconsent_kernel::{Clock, IdGenerator};
use idconsent_notification::{
    Channel, Dispatcher, MessageStore, MessageTransport, Notifier, RetryPolicy, SendLimits,
};
use idconsent_notify::{DevMailbox, HttpSms, HttpSmsConfig, SmtpEmail};
use idconsent_store_diesel::{Db, DieselMessageStore, DieselThrottle};
use secrecy::ExposeSecret;

use super::deployment::Wake;
use super::{NotifyNudge, WiringError};
use crate::config::{Config, Mode};

#[derive(Debug)]
pub struct Notifications {
    pub notifier: Arc<Notifier>,
    pub dispatcher: Arc<Dispatcher>,
    pub send_limits: Arc<SendLimits>,
}

pub fn build(
    config: &Config,
    db: &Db,
    clock: &Arc<dyn Clock>,
    ids: &Arc<dyn IdGenerator>,
    wake: &Wake,
) -> Result<Notifications, WiringError> {
    let messages: Arc<dyn MessageStore> = Arc::new(DieselMessageStore::new(db.clone()));
    Ok(Notifications {
        notifier: Arc::new(Notifier::new(
            messages.clone(),
            clock.clone(),
            ids.clone(),
            Some(Arc::new(NotifyNudge(wake.notifications.clone()))),
        )),
        dispatcher: Arc::new(Dispatcher::new(
            messages,
            transports(config)?,
            clock.clone(),
            RetryPolicy::default(),
        )),
        send_limits: Arc::new(SendLimits::new(
            Arc::new(DieselThrottle::new(db.clone())),
            clock.clone(),
            config.notify.send_limits,
        )),
    })
}

/// Dev mode delivers every channel to the dev mailbox; production uses what is configured and
/// leaves the rest queued.
fn transports(config: &Config) -> Result<Vec<Arc<dyn MessageTransport>>, WiringError> {
    let timeout = Duration::from_secs(30);
    if config.mode == Mode::Dev {
        return Ok(Channel::ALL
            .into_iter()
            .map(|channel| Arc::new(DevMailbox::new(channel)) as Arc<dyn MessageTransport>)
            .collect());
    }
    let mut transports: Vec<Arc<dyn MessageTransport>> = Vec::new();
    if let Some(smtp) = &config.notify.smtp {
        transports.push(Arc::new(SmtpEmail::new(
            smtp.url.expose_secret(),
            &smtp.from,
            timeout,
        )?));
    }
    if let Some(sms) = &config.notify.sms {
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
