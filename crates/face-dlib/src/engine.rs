//! The dlib engine. dlib's networks may not be shared between threads, so one set lives behind
//! a mutex and comparisons run one at a time per process, on tokio's blocking pool. A call
//! waits for its turn as a parked future (a semaphore), not as a blocked thread; the liveness
//! endpoint's face check waits at most [`FIND_FACE_WAIT`], so a flood of liveness requests
//! cannot queue without bound behind the detector.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

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

/// The longest a face check waits for the detector before answering that it is busy.
pub const FIND_FACE_WAIT: Duration = Duration::from_secs(2);

pub struct DlibFaces {
    networks: Arc<Mutex<Networks>>,
    /// One permit: the turn at the networks.
    turn: Arc<tokio::sync::Semaphore>,
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
            turn: Arc::new(tokio::sync::Semaphore::new(1)),
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

fn stopped(error: tokio::sync::AcquireError) -> AnalysisError {
    AnalysisError::Failed(error.to_string())
}

fn area(r: &Rectangle) -> i64 {
    (r.right - r.left) * (r.bottom - r.top)
}

/// `bytes` decoded and scaled down to the detection size.
fn for_detection(bytes: &[u8]) -> Result<image::DynamicImage, AnalysisError> {
    let (image, _) = decode(bytes).map_err(|error| AnalysisError::Failed(error.to_string()))?;
    Ok(if image.width().max(image.height()) > DETECTION_SIDE {
        image.resize(
            DETECTION_SIDE,
            DETECTION_SIDE,
            image::imageops::FilterType::Triangle,
        )
    } else {
        image
    })
}

/// The embedding of the largest face in `bytes`, `None` when there is no face.
fn embed(networks: &Networks, bytes: &[u8]) -> Result<Option<FaceEncoding>, AnalysisError> {
    let image = for_detection(bytes)?;
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
        let turn = self.turn.clone().acquire_owned().await.map_err(stopped)?;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
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

    /// The detector `compare` runs on a selfie (HOG proposals confirmed by the CNN; about
    /// 0.2 s with a face, 0.8 s without, where the CNN scans the whole frame). Busy for longer
    /// than [`FIND_FACE_WAIT`]: `Unavailable`, and the answer says the face was not checked.
    async fn find_face(&self, image: &[u8]) -> Result<bool, AnalysisError> {
        let image = image.to_vec();
        let networks = self.networks.clone();
        let turn = tokio::time::timeout(FIND_FACE_WAIT, self.turn.clone().acquire_owned())
            .await
            .map_err(|_| AnalysisError::Unavailable("the face detector is busy".into()))?
            .map_err(stopped)?;
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let networks = networks.lock().unwrap_or_else(PoisonError::into_inner);
            Ok(!faces(&networks, &for_detection(&image)?)?.is_empty())
        })
        .await
        .map_err(|error| AnalysisError::Failed(error.to_string()))?
    }

    fn models(&self) -> Vec<ModelUsed> {
        self.models.clone()
    }
}
