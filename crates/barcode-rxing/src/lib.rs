//! The PDF417 reader ([`BarcodeReader`]) on rxing. The photo is decoded within the image
//! adapter's bounds, turned grey and handed to the PDF417 detector (trying harder, and once more
//! on a half-size copy, which helps with photos much larger than the symbol needs). Runs on
//! tokio's blocking pool under one of the image adapter's decode permits.

#[cfg(feature = "fixtures")]
pub mod fixtures;

use async_trait::async_trait;
use idconsent_image_analysis::{decode, with_decode_permit};
use idconsent_verification::{AnalysisError, BarcodeReader};
use image::imageops::FilterType;
use rxing::{BarcodeFormat, DecodeHints, Exceptions};

#[derive(Debug, Clone, Copy, Default)]
pub struct RxingPdf417;

impl RxingPdf417 {
    pub fn new() -> Self {
        Self
    }
}

/// The payload of the first PDF417 symbol in `bytes`, `Ok(None)` when there is none.
pub fn read(bytes: &[u8]) -> Result<Option<String>, AnalysisError> {
    let (image, _) = decode(bytes).map_err(|error| AnalysisError::Failed(error.to_string()))?;
    let attempts = [
        image.to_luma8(),
        image
            .resize(image.width() / 2, image.height() / 2, FilterType::Triangle)
            .to_luma8(),
    ];
    for grey in attempts {
        let (width, height) = grey.dimensions();
        let mut hints = DecodeHints {
            TryHarder: Some(true),
            ..DecodeHints::default()
        };
        match rxing::helpers::detect_in_luma_with_hints(
            grey.into_raw(),
            width,
            height,
            Some(BarcodeFormat::PDF_417),
            &mut hints,
        ) {
            Ok(result) => return Ok(Some(result.getText().to_owned())),
            Err(Exceptions::NotFoundException(_)) => continue,
            Err(error) => return Err(AnalysisError::Failed(format!("PDF417: {error}"))),
        }
    }
    Ok(None)
}

#[async_trait]
impl BarcodeReader for RxingPdf417 {
    async fn read_pdf417(&self, image: &[u8]) -> Result<Option<String>, AnalysisError> {
        let bytes = image.to_vec();
        // The reader decodes the upload: it holds one of the process's decode permits.
        with_decode_permit(move || read(&bytes)).await?
    }
}
