//! Identity verification in tests: where the analysis models are, whether OCR can run here,
//! and generated documents ([`idconsent_ocr_tesseract::fixtures`]).

use std::path::{Path, PathBuf};

/// `IDC_IDENTITY_MODELS_DIR`, else the repository's `data/models` (where
/// `scripts/setup-identity.sh` puts them).
pub fn models_dir() -> PathBuf {
    std::env::var_os("IDC_IDENTITY_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/models"))
}

/// Whether Tesseract and the MRZ model are installed. When they are not, a test that needs
/// them prints a note and passes — unless `REQUIRE_BACKENDS` names `identity` (CI), where
/// that is a failure: a skipped analysis proves nothing.
pub fn ocr_available() -> bool {
    match idconsent_ocr_tesseract::TesseractMrz::locate(Path::new("tesseract"), &models_dir(), 1) {
        Ok(_) => true,
        Err(reason) => {
            let required = std::env::var("REQUIRE_BACKENDS")
                .is_ok_and(|backends| backends.split(',').any(|b| b.trim() == "identity"));
            assert!(!required, "identity analysis is required here: {reason}");
            eprintln!("NOTE: identity OCR tests skipped: {reason}");
            false
        }
    }
}

/// A test portrait `scripts/setup-identity.sh` put in `data/fixtures/faces` (`astronaut.png`,
/// `camera.png`, `coffee.png`: public-domain and CC0 standard test images).
pub fn portrait(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../data/fixtures/faces")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run scripts/setup-identity.sh",
            path.display()
        )
    })
}
