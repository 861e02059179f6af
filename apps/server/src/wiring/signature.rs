//! Signature requests: documents in the blob store, PDFs through lopdf.

use std::sync::Arc;

use idconsent_pdf_sign::{LopdfCertificateMaker, LopdfInspector};
use idconsent_signature::{SignaturePorts, SignatureService, SignatureSettings};
use idconsent_store_diesel::DieselSignatureStore;

use super::Shared;

pub fn build(shared: &Shared) -> Arc<SignatureService> {
    let config = &shared.config;
    Arc::new(SignatureService::new(
        SignaturePorts {
            requests: Arc::new(DieselSignatureStore::new(shared.db.clone())),
            documents: shared.blobs.clone(),
            inspector: Arc::new(LopdfInspector),
            certificates: Arc::new(LopdfCertificateMaker),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            outbox_written: Some(shared.outbox_written()),
        },
        SignatureSettings {
            allow_private_callbacks: config.webhooks.allow_private_callbacks,
            sign_url: config.signature.sign_url(&config.base_url),
            ..SignatureSettings::default()
        },
    ))
}
