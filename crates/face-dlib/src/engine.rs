//! The dlib engine. dlib's networks may not be shared between threads, so one set lives behind
//! a mutex and comparisons run one at a time per process, on tokio's blocking pool.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use dlib_face_recognition::{
    FaceDetector, FaceDetectorCnn, FaceDetectorTrait, FaceEncoderNetwork, FaceEncoderTrait,
    FaceEncoding, ImageMatrix, LandmarkPredictor, LandmarkPredictorTrait, Rectangle,
};
use idconsent_image_analysis::decode;
use idconsent_verification::{AnalysisError, FaceComparison, FaceMatcher, FaceSource, ModelUsed};

use crate::{DETECTION_SIDE, DETECTOR, EMBEDDING, LANDMARKS, model_files};

struct Networks {
    hog: FaceDetector,
    cnn: FaceDetectorCnn,
    landmarks: LandmarkPredictor,
    encoder: FaceEncoderNetwork,
}

pub struct DlibFaces {
    networks: Arc<Mutex<Networks>>,
    models: Vec<ModelUsed>,
}

impl std::fmt::Debug for DlibFaces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DlibFaces")
            .field("models", &self.models)
            .finish_non_exhaustive()
    }
}

impl DlibFaces {
    /// The matcher with the models in `models_dir`, or why not.
    pub fn locate(models_dir: &Path) -> Result<Self, String> {
        let models = model_files(models_dir)?;
        let open_error = |name: &str, error: String| format!("{name}: {error}");
        let networks = Networks {
            hog: FaceDetector::new(),
            cnn: FaceDetectorCnn::open(models_dir.join(DETECTOR))
                .map_err(|error| open_error(DETECTOR, error))?,
            landmarks: LandmarkPredictor::open(models_dir.join(LANDMARKS))
                .map_err(|error| open_error(LANDMARKS, error))?,
            encoder: FaceEncoderNetwork::open(models_dir.join(EMBEDDING))
                .map_err(|error| open_error(EMBEDDING, error))?,
        };
        Ok(Self {
            networks: Arc::new(Mutex::new(networks)),
            models,
        })
    }
}

fn matrix_of(image: &image::DynamicImage) -> Result<ImageMatrix, AnalysisError> {
    let rgb = image.to_rgb8();
    let (width, height) = rgb.dimensions();
    let buffer = image024::RgbImage::from_raw(width, height, rgb.into_raw())
        .ok_or_else(|| AnalysisError::Failed("the image has the wrong size".into()))?;
    Ok(ImageMatrix::from_image(&buffer))
}

/// The faces in `image`, largest first. HOG proposes (fast, but it takes patterns such as a
/// mission patch for faces); the CNN confirms each proposal on a small crop around it, which
/// costs a fraction of running it over the whole page. When HOG proposes nothing, the CNN
/// looks at the whole image.
fn faces(
    networks: &Networks,
    image: &image::DynamicImage,
) -> Result<Vec<Rectangle>, AnalysisError> {
    let matrix = matrix_of(image)?;
    let proposals = networks.hog.face_locations(&matrix);
    if proposals.is_empty() {
        let mut found = networks.cnn.face_locations(&matrix).to_vec();
        found.sort_by_key(|r| std::cmp::Reverse(area(r)));
        return Ok(found);
    }
    let mut confirmed = Vec::new();
    for proposal in proposals.iter() {
        let side = (proposal.right - proposal.left).max(proposal.bottom - proposal.top);
        let clamp = |value: i64, max: u32| value.clamp(0, i64::from(max)) as u32;
        let left = clamp(proposal.left - side, image.width());
        let top = clamp(proposal.top - side, image.height());
        let right = clamp(proposal.right + side, image.width());
        let bottom = clamp(proposal.bottom + side, image.height());
        if right <= left || bottom <= top {
            continue;
        }
        let crop = image.crop_imm(left, top, right - left, bottom - top);
        if !networks.cnn.face_locations(&matrix_of(&crop)?).is_empty() {
            confirmed.push(*proposal);
        }
    }
    confirmed.sort_by_key(|r| std::cmp::Reverse(area(r)));
    Ok(confirmed)
}

fn area(r: &Rectangle) -> i64 {
    (r.right - r.left) * (r.bottom - r.top)
}

/// The embedding of the largest face in `bytes`, `None` when there is no face.
fn embed(networks: &Networks, bytes: &[u8]) -> Result<Option<FaceEncoding>, AnalysisError> {
    let (image, _) = decode(bytes).map_err(|error| AnalysisError::Failed(error.to_string()))?;
    let image = if image.width().max(image.height()) > DETECTION_SIDE {
        image.resize(
            DETECTION_SIDE,
            DETECTION_SIDE,
            image::imageops::FilterType::Triangle,
        )
    } else {
        image
    };
    let Some(face) = faces(networks, &image)?.into_iter().next() else {
        return Ok(None);
    };
    let matrix = matrix_of(&image)?;
    let landmarks = networks.landmarks.face_landmarks(&matrix, &face);
    Ok(networks
        .encoder
        .get_face_encodings(&matrix, &[landmarks], 0)
        .first()
        .cloned())
}

#[async_trait]
impl FaceMatcher for DlibFaces {
    async fn compare(
        &self,
        document: &[u8],
        selfie: &[u8],
    ) -> Result<FaceComparison, AnalysisError> {
        let (document, selfie) = (document.to_vec(), selfie.to_vec());
        let networks = self.networks.clone();
        tokio::task::spawn_blocking(move || {
            let networks = networks.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(on_document) = embed(&networks, &document)? else {
                return Ok(FaceComparison::NoFace(FaceSource::Document));
            };
            let Some(in_selfie) = embed(&networks, &selfie)? else {
                return Ok(FaceComparison::NoFace(FaceSource::Selfie));
            };
            Ok(FaceComparison::Distance(on_document.distance(&in_selfie)))
        })
        .await
        .map_err(|error| AnalysisError::Failed(error.to_string()))?
    }

    fn models(&self) -> Vec<ModelUsed> {
        self.models.clone()
    }
}
