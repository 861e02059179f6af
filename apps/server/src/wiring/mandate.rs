//! Digital mandates: the diesel store, and who may be asked in live (enrolled phones).

use std::sync::Arc;

use idconsent_mandate::{MandatePorts, MandateService, MandateSettings};
use idconsent_notification::Invitations;
use idconsent_store_diesel::{DieselEndUserStore, DieselMandateStore};

use super::Shared;
use super::bridges::EnrolledRecipients;

pub fn build(shared: &Shared, invitations: Arc<Invitations>) -> Arc<MandateService> {
    let config = &shared.config;
    Arc::new(MandateService::new(
        MandatePorts {
            mandates: Arc::new(DieselMandateStore::new(shared.db.clone())),
            recipients: Arc::new(EnrolledRecipients {
                users: Arc::new(DieselEndUserStore::new(shared.db.clone())),
            }),
            metering: shared.metering.clone(),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            outbox_written: Some(shared.outbox_written()),
            notifications: shared.notifier.clone(),
            invitations,
        },
        MandateSettings {
            allow_private_callbacks: config.webhooks.allow_private_callbacks,
            page_url: format!("{}/mandates", config.base_url.trim_end_matches('/')),
        },
    ))
}
