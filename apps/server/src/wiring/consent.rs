//! Consent sessions and their QR codes (one renderer: the sessions' and the merchants' codes).

use std::sync::Arc;

use idconsent_consent::{ConsentPorts, ConsentService, ConsentSettings, FloodLimits};
use idconsent_kernel::QrRenderer;
use idconsent_qr_render::QrCodegenRenderer;
use idconsent_store_diesel::{DieselEndUserStore, DieselSessionStore};

use super::Shared;
use super::bridges::EnrolledRecipients;

#[derive(Debug)]
pub struct Consents {
    pub service: Arc<ConsentService>,
    pub qr: Arc<dyn QrRenderer>,
}

pub fn build(shared: &Shared) -> Consents {
    let config = &shared.config;
    let qr: Arc<dyn QrRenderer> = Arc::new(QrCodegenRenderer::default());
    let service = Arc::new(ConsentService::new(
        ConsentPorts {
            sessions: Arc::new(DieselSessionStore::new(shared.db.clone())),
            recipients: Arc::new(EnrolledRecipients {
                users: Arc::new(DieselEndUserStore::new(shared.db.clone())),
            }),
            metering: shared.metering.clone(),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            outbox_written: Some(shared.outbox_written()),
            qr: qr.clone(),
        },
        ConsentSettings {
            ttl: config.consent.ttl,
            app_scheme: config.consent.app_scheme.clone(),
            flood: FloodLimits::default(),
            allow_private_callbacks: config.webhooks.allow_private_callbacks,
        },
    ));
    Consents { service, qr }
}
