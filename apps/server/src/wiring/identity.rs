//! Identity verification: images in the blob store, jobs in the database, the image adapter
//! and the PDF417 reader always, Tesseract when it and its model are installed (else the MRZ
//! check says why not).

use std::sync::Arc;

use idconsent_barcode_rxing::RxingPdf417;
use idconsent_image_analysis::ImageAnalysis;
use idconsent_ocr_tesseract::TesseractMrz;
use idconsent_store_diesel::DieselVerificationStore;
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
