//! Signature requests: documents in the blob store, PDFs through lopdf, certificates signed
//! with the configured identity (or a development one made in the data directory).

use std::sync::Arc;

use idconsent_notification::Invitations;
use idconsent_pdf_sign::{IdentityError, LopdfInspector, PadesCertificateMaker, SigningIdentity};
use idconsent_signature::{SignaturePorts, SignatureService, SignatureSettings};
use idconsent_store_diesel::DieselSignatureStore;

use super::Shared;

pub fn build(
    shared: &Shared,
    invitations: Arc<Invitations>,
) -> Result<Arc<SignatureService>, IdentityError> {
    let config = &shared.config;
    let identity = match &config.signature.signing_identity {
        Some((cert, key)) => {
            let read = |path: &std::path::Path| {
                std::fs::read_to_string(path).map_err(|source| IdentityError::Io {
                    path: path.display().to_string(),
                    source,
                })
            };
            SigningIdentity::from_pem(&read(cert)?, &read(key)?)?
        }
        None => SigningIdentity::load_or_create_in(&config.data_dir)?,
    };
    Ok(Arc::new(SignatureService::new(
        SignaturePorts {
            requests: Arc::new(DieselSignatureStore::new(shared.db.clone())),
            documents: shared.blobs.clone(),
            inspector: Arc::new(LopdfInspector),
            certificates: Arc::new(PadesCertificateMaker::new(Arc::new(identity))),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            outbox_written: Some(shared.outbox_written()),
            notifications: shared.notifier.clone(),
            invitations,
        },
        SignatureSettings {
            allow_private_callbacks: config.webhooks.allow_private_callbacks,
            sign_url: config.signature.sign_url(&config.base_url),
            ..SignatureSettings::default()
        },
    )))
}
