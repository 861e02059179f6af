//! Webhooks: the outbox's dispatcher and the merchant's delivery log.

use std::sync::Arc;

use idconsent_store_diesel::DieselDeliveryStore;
use idconsent_webhook::{DeliveryLog, DeliveryStore, Dispatcher};
use idconsent_webhook_http::HttpWebhookTransport;

use super::merchant::Merchants;
use super::{Shared, WiringError};

#[derive(Debug)]
pub struct Webhooks {
    pub dispatcher: Arc<Dispatcher>,
    pub log: Arc<DeliveryLog>,
}

pub fn build(shared: &Shared, merchants: &Merchants) -> Result<Webhooks, WiringError> {
    let config = &shared.config;
    let store: Arc<dyn DeliveryStore> = Arc::new(DieselDeliveryStore::new(shared.db.clone()));
    Ok(Webhooks {
        dispatcher: Arc::new(
            Dispatcher::new(
                store.clone(),
                Arc::new(HttpWebhookTransport::new(
                    config.webhooks.allow_private_callbacks,
                )?),
                Arc::new(idconsent_auth_hmac::HmacWebhookSigner),
                merchants.signing_secrets.clone(),
                shared.clock.clone(),
                config.webhooks.retry.clone(),
            )
            .on_finished(shared.outbox_written()),
        ),
        log: Arc::new(DeliveryLog::new(
            store,
            shared.clock.clone(),
            Some(shared.outbox_written()),
        )),
    })
}
