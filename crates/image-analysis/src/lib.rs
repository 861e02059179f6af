//! The image adapter of identity verification ([`ImageAnalyzer`]): decodes uploads with the
//! `image` crate inside fixed bounds and measures the liveness signals of
//! [`idconsent_verification::liveness`]. Decoding and measuring run on tokio's blocking pool,
//! never on a request's worker thread, holding one of the process's decode permits
//! ([`with_decode_permit`]).

mod jpeg;
mod signals;

#[cfg(feature = "fixtures")]
pub mod fixtures;

use async_trait::async_trait;
use idconsent_verification::{
    AnalysisError, ImageAnalyzer, ImageFacts, ImageFormat, ImageRejection, LivenessSignals,
};
use image::{DynamicImage, ImageReader, Limits};

pub use signals::measure;

/// The longest side accepted: larger than any phone camera's, smaller than a decompression bomb.
pub const MAX_SIDE: u32 = 8_192;
/// The shortest side accepted: below this nothing can be read.
pub const MIN_SIDE: u32 = 64;
/// The most pixels accepted (a 40-megapixel camera): a small compressed file can claim a huge
/// canvas, and each decode holds it in memory.
pub const MAX_PIXELS: u64 = 40_000_000;

/// The longest side over the shortest accepted: any photo of a document, a face or a licence
/// back is well inside it; a strip of 64 × 8192 pixels is not, and would become hundreds of
/// megapixels once scaled to the width the OCR reads.
pub const MAX_ASPECT_RATIO: u32 = 4;

/// Decodes at once in this process, whatever the number of requests: each may hold up to
/// `MAX_PIXELS` × 4 bytes, so a flood of uploads queues here instead of exhausting memory.
static DECODES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

#[derive(Debug, Clone, Copy, Default)]
pub struct ImageAnalysis;

impl ImageAnalysis {
    pub fn new() -> Self {
        Self
    }
}

/// The image, decoded within the bounds, and its format.
pub fn decode(bytes: &[u8]) -> Result<(DynamicImage, ImageFormat), ImageRejection> {
    let format = match image::guess_format(bytes) {
        Ok(image::ImageFormat::Jpeg) => ImageFormat::Jpeg,
        Ok(image::ImageFormat::Png) => ImageFormat::Png,
        Ok(image::ImageFormat::WebP) => ImageFormat::Webp,
        _ => return Err(ImageRejection::NotAnImage),
    };
    // The JPEG decoder fills a truncated scan with grey; a cut-off upload is refused instead.
    if format == ImageFormat::Jpeg && !bytes.windows(2).any(|pair| pair == [0xFF, 0xD9]) {
        return Err(ImageRejection::NotAnImage);
    }
    let reader = || {
        ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|_| ImageRejection::NotAnImage)
    };
    // The header first: a bomb's dimensions are refused before anything is allocated.
    let (width, height) = reader()?
        .into_dimensions()
        .map_err(|_| ImageRejection::NotAnImage)?;
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(ImageRejection::TooLarge { max: MAX_SIDE });
    }
    if width < MIN_SIDE || height < MIN_SIDE {
        return Err(ImageRejection::TooSmall { min: MIN_SIDE });
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageRejection::TooManyPixels { max: MAX_PIXELS });
    }
    if width.max(height) > height.min(width).saturating_mul(MAX_ASPECT_RATIO) {
        return Err(ImageRejection::ExtremeShape {
            max_ratio: MAX_ASPECT_RATIO,
        });
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_PIXELS * 4 + (16 << 20));
    let mut reader = reader()?;
    reader.limits(limits);
    let image = reader.decode().map_err(|_| ImageRejection::NotAnImage)?;
    Ok((image, format))
}

/// Runs `work`, which decodes an upload, on tokio's blocking pool while holding one of this
/// process's decode permits: every decoder of the identity adapters (this one, the OCR
/// clean-up, the PDF417 reader) takes one, so at most four decoded images exist at once.
pub async fn with_decode_permit<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AnalysisError> {
    let _permit = DECODES
        .acquire()
        .await
        .map_err(|error| AnalysisError::Failed(error.to_string()))?;
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| AnalysisError::Failed(format!("image analysis stopped: {error}")))
}

#[async_trait]
impl ImageAnalyzer for ImageAnalysis {
    async fn inspect(&self, bytes: &[u8]) -> Result<ImageFacts, ImageRejection> {
        let bytes = bytes.to_vec();
        with_decode_permit(move || {
            decode(&bytes).map(|(image, format)| ImageFacts {
                format,
                width: image.width(),
                height: image.height(),
            })
        })
        .await
        .unwrap_or(Err(ImageRejection::NotAnImage))
    }

    async fn liveness_signals(&self, image: &[u8]) -> Result<LivenessSignals, AnalysisError> {
        let bytes = image.to_vec();
        with_decode_permit(move || {
            let (image, format) =
                decode(&bytes).map_err(|error| AnalysisError::Failed(error.to_string()))?;
            let quality = match format {
                ImageFormat::Jpeg => jpeg::estimate_quality(&bytes),
                _ => None,
            };
            Ok(measure(&image, quality))
        })
        .await?
    }
}
