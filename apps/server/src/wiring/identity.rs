//! Identity verification: images in the blob store, jobs in the database, the image adapter
//! and the PDF417 reader always, Tesseract when it and its model are installed (else the MRZ
//! check says why not).

use std::sync::Arc;

use idconsent_barcode_rxing::RxingPdf417;
use idconsent_emrtd::{DEFAULT_CONCURRENCY, EmrtdVerifier, TrustStore};
use idconsent_image_analysis::ImageAnalysis;
use idconsent_ocr_tesseract::TesseractMrz;
use idconsent_store_diesel::{DieselChipChallengeStore, DieselVerificationStore};
use idconsent_verification::chip::{ChipVerifier, NoChipVerifier};
use idconsent_verification::{
    FaceMatcher, MrzReader, NotInstalled, VerificationPorts, VerificationService,
    VerificationSettings,
};

use super::Shared;

/// dlib when the binary was built with `--features faces` and the models are installed.
#[cfg(feature = "faces")]
fn face_matcher(config: &crate::config::IdentityConfig) -> Arc<dyn FaceMatcher> {
    match idconsent_face_dlib::DlibFaces::locate(&config.models_dir) {
        Ok(matcher) => Arc::new(matcher),
        Err(reason) => {
            tracing::warn!(%reason, "identity: face comparison unavailable");
            Arc::new(NotInstalled::new(
                "face comparison is not installed on this server (scripts/setup-identity.sh)",
            ))
        }
    }
}

#[cfg(not(feature = "faces"))]
fn face_matcher(_config: &crate::config::IdentityConfig) -> Arc<dyn FaceMatcher> {
    Arc::new(NotInstalled::new(
        "face comparison is not part of this build (build with --features faces)",
    ))
}

/// The chip verifier over `IDC_CSCA_DIR`'s trust store, read once now; files it could not use
/// are logged one by one. Without a directory, or with no CSCA in it, chips are reported
/// `not_checked` with the reason — nothing is trusted by default.
fn chip_verifier(shared: &Shared) -> Arc<dyn ChipVerifier> {
    let Some(dir) = &shared.config.identity.csca_dir else {
        return Arc::new(NoChipVerifier::new(
            "no CSCA is trusted on this server (IDC_CSCA_DIR is not set)",
        ));
    };
    let trust = match TrustStore::load_dir(dir, shared.clock.now()) {
        Ok(trust) => trust,
        Err(error) => {
            tracing::error!(%error, "identity: the CSCA trust store cannot be read");
            return Arc::new(NoChipVerifier::new(
                "the CSCA trust store of this server cannot be read",
            ));
        }
    };
    for rejected in trust.rejected() {
        tracing::warn!(trust.file = %rejected.file, reason = %rejected.reason, "identity: CSCA file rejected");
    }
    tracing::info!(
        csca.anchors = trust.anchor_count(),
        csca.crls = trust.crl_count(),
        csca.rejected = trust.rejected().len(),
        "identity: CSCA trust store loaded"
    );
    if trust.anchor_count() == 0 {
        return Arc::new(NoChipVerifier::new(
            "no CSCA is trusted on this server (IDC_CSCA_DIR holds none it could use)",
        ));
    }
    Arc::new(EmrtdVerifier::new(trust, DEFAULT_CONCURRENCY))
}

pub fn build(shared: &Shared) -> Arc<VerificationService> {
    let config = &shared.config.identity;
    let workers = usize::try_from(config.workers.max(1)).unwrap_or(1);
    let mrz: Arc<dyn MrzReader> =
        match TesseractMrz::locate(&config.tesseract, &config.models_dir, workers) {
            Ok(reader) => Arc::new(reader),
            Err(reason) => {
                // The details (paths) are for the operator's log, not for merchants' results.
                tracing::warn!(%reason, "identity: MRZ reading unavailable");
                Arc::new(NotInstalled::new(
                    "MRZ reading is not installed on this server (scripts/setup-identity.sh)",
                ))
            }
        };
    Arc::new(VerificationService::new(
        VerificationPorts {
            store: Arc::new(DieselVerificationStore::new(shared.db.clone())),
            blobs: shared.blobs.clone(),
            images: Arc::new(ImageAnalysis::new()),
            mrz,
            barcodes: Arc::new(RxingPdf417::new()),
            faces: face_matcher(config),
            metering: shared.metering.clone(),
            chip_challenges: Arc::new(DieselChipChallengeStore::new(shared.db.clone())),
            chip_verifier: chip_verifier(shared),
            random: shared.random.clone(),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            outbox_written: Some(shared.outbox_written()),
            job_created: Some(Arc::new(super::NotifyNudge(shared.wake.identity.clone()))),
        },
        VerificationSettings {
            sandbox_daily_cap: shared.config.identity.sandbox_daily_cap,
            ..VerificationSettings::default()
        },
    ))
}
