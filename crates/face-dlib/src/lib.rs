//! The face matcher ([`FaceMatcher`]) on dlib: find the face (HOG first, the MMOD CNN when HOG
//! finds none), align it by five landmarks, embed it with the ResNet model, and return the
//! Euclidean distance of the two embeddings — the domain judges it (`verdict::FACE_MATCH`).
//!
//! The models are the CC0 files of the PyPI package `face_recognition_models` 0.3.0 (never the
//! 68-point predictor, whose training data is non-commercial), unpacked by
//! `scripts/setup-identity.sh`. The engine needs Debian's `libdlib-dev` and `libopenblas-dev`
//! to build, so it sits behind the feature `dlib` (the server's `faces`).

use std::path::Path;

use idconsent_verification::ModelUsed;

/// The model files, in the models directory.
pub const DETECTOR: &str = "mmod_human_face_detector.dat";
pub const LANDMARKS: &str = "shape_predictor_5_face_landmarks.dat";
pub const EMBEDDING: &str = "dlib_face_recognition_resnet_model_v1.dat";
/// Where the models come from, recorded with every result.
pub const MODEL_SOURCE: &str = "face_recognition_models 0.3.0 (PyPI, CC0)";
/// Images are scaled down to this longest side before detection: the portrait on a passport
/// page photographed whole stays above the detectors' 80-pixel face size, and it bounds the
/// CNN's time on a large selfie.
pub const DETECTION_SIDE: u32 = 1_600;

/// The model files' descriptions (name, source, sha256), or which one is missing.
pub fn model_files(models_dir: &Path) -> Result<Vec<ModelUsed>, String> {
    [DETECTOR, LANDMARKS, EMBEDDING]
        .iter()
        .map(|name| {
            let path = models_dir.join(name);
            let bytes = std::fs::read(&path).map_err(|_| {
                format!(
                    "no face model at {}: run scripts/setup-identity.sh",
                    path.display()
                )
            })?;
            Ok(ModelUsed {
                name: (*name).to_owned(),
                version: MODEL_SOURCE.to_owned(),
                sha256: hex::encode(ring::digest::digest(&ring::digest::SHA256, &bytes)),
            })
        })
        .collect()
}

#[cfg(feature = "dlib")]
mod engine;

#[cfg(feature = "dlib")]
pub use engine::DlibFaces;
