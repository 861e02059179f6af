//! Signature requests: documents in the blob store, PDFs through lopdf in child processes
//! (ADR 0036), certificates signed with the configured identity (or a development one made in
//! the data directory).

use std::sync::Arc;

use idconsent_notification::Invitations;
use idconsent_pdf_sign::{
    IdentityError, LopdfInspector, PadesCertificateMaker, SigningIdentity, TrustedTime,
};
use idconsent_signature::{SignaturePorts, SignatureService, SignatureSettings};
use idconsent_store_diesel::DieselSignatureStore;
use idconsent_tsa::{HttpTimestampAuthority, TsaSettings};
use idconsent_untrusted::{ChildPool, PoolSettings};

use super::{Shared, WiringError};

/// The longest answer a parser child may give: a page count, or a certificate's update (the
/// audit pages, a font subset and the signature placeholder: tens of KiB, base64).
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// The pool of PDF parser children; checked once here so that a worker that cannot run fails
/// start-up, naming its path, instead of every upload.
async fn parsers(shared: &Shared) -> Result<ChildPool, WiringError> {
    let config = &shared.config.untrusted;
    let pool = ChildPool::new(PoolSettings {
        worker: config.worker.clone(),
        memory_bytes: config.memory_bytes,
        timeout: config.timeout,
        parallel: config.parallel,
        queue_wait: config.queue_wait,
        max_answer_bytes: MAX_ANSWER_BYTES,
    });
    pool.check().await.map_err(WiringError::Parsers)?;
    Ok(pool)
}

pub async fn build(
    shared: &Shared,
    invitations: Arc<Invitations>,
) -> Result<Arc<SignatureService>, WiringError> {
    let pool = parsers(shared).await?;
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
    let mut certificates = PadesCertificateMaker::new(Arc::new(identity), pool.clone());
    if let Some(tsa) = &config.signature.tsa {
        let pem = std::fs::read(&tsa.certs).map_err(|error| {
            WiringError::TimestampAuthority(format!("{}: {error}", tsa.certs.display()))
        })?;
        let settings = TsaSettings::from_pem(&tsa.url, &pem, tsa.policy.as_deref())
            .map_err(|error| WiringError::TimestampAuthority(error.to_string()))?;
        let authority = HttpTimestampAuthority::new(settings)
            .map_err(|error| WiringError::TimestampAuthority(error.to_string()))?;
        certificates = certificates.with_trusted_time(TrustedTime {
            authority: Arc::new(authority),
            required: tsa.required,
        });
    }
    Ok(Arc::new(SignatureService::new(
        SignaturePorts {
            requests: Arc::new(DieselSignatureStore::new(shared.db.clone())),
            documents: shared.blobs.clone(),
            inspector: Arc::new(LopdfInspector::new(pool.clone())),
            certificates: Arc::new(certificates),
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
