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
    let found =
        idconsent_ocr_tesseract::TesseractMrz::locate(Path::new("tesseract"), &models_dir(), 1);
    idconsent_verification::testing::engine_or_skip("identity OCR", found).is_some()
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
