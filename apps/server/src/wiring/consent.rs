//! Consent sessions and their QR codes.

use std::sync::Arc;

use idconsent_consent::{ConsentService, ConsentSettings, FloodLimits};
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
    let service = Arc::new(ConsentService::new(
        Arc::new(DieselSessionStore::new(shared.db.clone())),
        Arc::new(EnrolledRecipients {
            users: Arc::new(DieselEndUserStore::new(shared.db.clone())),
        }),
        shared.metering.clone(),
        shared.clock.clone(),
        shared.ids.clone(),
        Some(shared.outbox_written()),
        ConsentSettings {
            ttl: config.consent.ttl,
            app_scheme: config.consent.app_scheme.clone(),
            flood: FloodLimits::default(),
            allow_private_callbacks: config.webhooks.allow_private_callbacks,
        },
    ));
    Consents {
        service,
        qr: Arc::new(QrCodegenRenderer::default()),
    }
}
