//! A generated licence back: an AAMVA payload as a PDF417 symbol on a card-coloured
//! background, saved as JPEG like a phone photo. Never a real person's card.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use image::{Rgb, RgbImage};
use rxing::{BarcodeFormat, Writer};

/// Pixels per module of the symbol.
const MODULE: u32 = 3;
const MARGIN: u32 = 60;

/// The back of an ID-1 card carrying `payload` as PDF417.
pub fn licence_back(payload: &str) -> Vec<u8> {
    let matrix = rxing::pdf417::PDF417Writer
        .encode(payload, &BarcodeFormat::PDF_417, 0, 0)
        .expect("the payload fits a PDF417 symbol");
    let (columns, rows) = (matrix.width(), matrix.height());
    let width = (columns * MODULE + 2 * MARGIN).max(1_000);
    let height = (rows * MODULE * 3 + 2 * MARGIN).max(630);
    let left = (width - columns * MODULE) / 2;
    let top = height - MARGIN - rows * MODULE * 3;
    let card = RgbImage::from_fn(width, height, |x, y| {
        let (column, row) = (
            x.checked_sub(left).map(|dx| dx / MODULE),
            y.checked_sub(top).map(|dy| dy / (MODULE * 3)),
        );
        match (column, row) {
            (Some(column), Some(row))
                if column < columns && row < rows && matrix.get(column, row) =>
            {
                Rgb([20, 20, 24])
            }
            _ => Rgb([236, 232, 220]),
        }
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 90)
        .encode_image(&card)
        .unwrap();
    jpeg
}
