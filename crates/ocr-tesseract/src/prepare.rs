//! From an uploaded photo to the PNG the OCR engine reads best: the zone's lines level and
//! about 40 pixels high, black on white.

use idconsent_image_analysis::decode;
use idconsent_verification::ImageRejection;
use image::imageops::{FilterType, resize};
use image::{GrayImage, Luma};

/// The width the zone is scaled to: a 44-character line then has characters about 25 pixels
/// wide, where the MRZ model reads best.
const PAGE_WIDTH: u32 = 1_400;
/// Enlarging adds no detail: a small photo is scaled up at most this much (so the working
/// image is at most twice the upload's sides, whatever its shape).
const MAX_UPSCALE: f64 = 2.0;
/// The share of the page, from the bottom, where the zone sits.
const ZONE_SHARE: f64 = 0.45;
/// The steepest tilt straightened, in degrees.
const MAX_TILT: f64 = 8.0;
/// The tilt is measured on a copy at most this wide: the angle does not depend on the scale,
/// and the search then costs a bounded number of pixels whatever the upload.
const TILT_WIDTH: u32 = 700;

/// Decodes, crops, scales, straightens and binarises `bytes`; a PNG.
///
/// Bounded for any upload the decoder accepts (at most 40 megapixels, sides at most 4:1): the
/// decoded image is turned grey and cut to its lower part before scaling, the zone is scaled
/// to [`PAGE_WIDTH`] but never up more than [`MAX_UPSCALE`], and the tilt search reads a copy
/// at most [`TILT_WIDTH`] wide (docs/security.md, "Image preparation").
pub fn prepare(bytes: &[u8]) -> Result<Vec<u8>, ImageRejection> {
    let (image, _) = decode(bytes)?;
    let grey = image.to_luma8();
    drop(image);
    let top = ((1.0 - ZONE_SHARE) * f64::from(grey.height())) as u32;
    let zone =
        image::imageops::crop_imm(&grey, 0, top, grey.width(), grey.height() - top).to_image();
    drop(grey);
    let scale = (f64::from(PAGE_WIDTH) / f64::from(zone.width())).min(MAX_UPSCALE);
    let scaled = |side: u32| ((f64::from(side) * scale).round() as u32).max(1);
    let zone = resize(
        &zone,
        scaled(zone.width()),
        scaled(zone.height()),
        FilterType::CatmullRom,
    );
    let angle = tilt_of(&zone);
    let level = if angle.abs() < 0.25 {
        zone
    } else {
        rotate(&zone, -angle)
    };
    let threshold = otsu(&level);
    let mut page = GrayImage::from_pixel(level.width() + 40, level.height() + 40, Luma([255]));
    for (x, y, pixel) in level.enumerate_pixels() {
        let ink = pixel.0[0] < threshold;
        page.put_pixel(x + 20, y + 20, Luma([if ink { 0 } else { 255 }]));
    }
    let mut png = std::io::Cursor::new(Vec::new());
    page.write_to(&mut png, image::ImageFormat::Png)
        .map_err(|_| ImageRejection::NotAnImage)?;
    Ok(png.into_inner())
}

/// The zone's tilt in degrees, measured on a copy at most [`TILT_WIDTH`] wide.
fn tilt_of(zone: &GrayImage) -> f64 {
    if zone.width() <= TILT_WIDTH {
        return tilt(zone, otsu(zone));
    }
    let height =
        (u64::from(zone.height()) * u64::from(TILT_WIDTH) / u64::from(zone.width())).max(1);
    let small = resize(
        zone,
        TILT_WIDTH,
        u32::try_from(height).unwrap_or(u32::MAX),
        FilterType::Triangle,
    );
    tilt(&small, otsu(&small))
}

/// Otsu's threshold: the grey level that best separates ink from paper.
fn otsu(image: &GrayImage) -> u8 {
    let mut histogram = [0u64; 256];
    for pixel in image.pixels() {
        histogram[usize::from(pixel.0[0])] += 1;
    }
    let total: u64 = histogram.iter().sum();
    let weighted: f64 = histogram
        .iter()
        .enumerate()
        .map(|(level, count)| level as f64 * *count as f64)
        .sum();
    let (mut background, mut background_sum) = (0u64, 0.0);
    let (mut best, mut best_level) = (0.0, 128u8);
    for (level, count) in histogram.iter().enumerate() {
        background += count;
        if background == 0 || background == total {
            continue;
        }
        background_sum += level as f64 * *count as f64;
        let foreground = total - background;
        let mean_back = background_sum / background as f64;
        let mean_fore = (weighted - background_sum) / foreground as f64;
        let between = background as f64 * foreground as f64 * (mean_back - mean_fore).powi(2);
        if between > best {
            best = between;
            best_level = u8::try_from(level).unwrap_or(u8::MAX);
        }
    }
    best_level.saturating_add(1)
}

/// The tilt (degrees) at which the ink's row profile is sharpest: text lines then fall into
/// few rows and the gaps between them into none.
fn tilt(image: &GrayImage, threshold: u8) -> f64 {
    // At most TILT_WIDTH × (its height) points, four bytes each.
    let ink: Vec<(u16, u16)> = image
        .enumerate_pixels()
        .filter(|(_, _, pixel)| pixel.0[0] < threshold)
        .filter_map(|(x, y, _)| Some((u16::try_from(x).ok()?, u16::try_from(y).ok()?)))
        .collect();
    if ink.is_empty() {
        return 0.0;
    }
    let height = f64::from(image.height());
    let width = f64::from(image.width());
    let rows = (height + width * (MAX_TILT.to_radians().sin()) * 2.0) as usize + 2;
    let offset = width * MAX_TILT.to_radians().sin();
    let mut best = (f64::MIN, 0.0);
    let mut angle = -MAX_TILT;
    while angle <= MAX_TILT {
        let (sin, cos) = angle.to_radians().sin_cos();
        let mut profile = vec![0u32; rows];
        for &(x, y) in &ink {
            let row = (f64::from(y) * cos - f64::from(x) * sin + offset).round();
            if row >= 0.0 && (row as usize) < rows {
                profile[row as usize] += 1;
            }
        }
        let sharpness: f64 = profile.iter().map(|n| f64::from(*n).powi(2)).sum();
        if sharpness > best.0 {
            best = (sharpness, angle);
        }
        angle += 0.5;
    }
    best.1
}

/// `image` rotated by `degrees` about its centre (bilinear, paper-white outside).
fn rotate(image: &GrayImage, degrees: f64) -> GrayImage {
    let (sin, cos) = degrees.to_radians().sin_cos();
    let (w, h) = (image.width(), image.height());
    let (cx, cy) = (f64::from(w) / 2.0, f64::from(h) / 2.0);
    let sample = |x: f64, y: f64| -> f64 {
        if x < 0.0 || y < 0.0 || x >= f64::from(w - 1) || y >= f64::from(h - 1) {
            return 255.0;
        }
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let at = |dx: u32, dy: u32| f64::from(image.get_pixel(x0 as u32 + dx, y0 as u32 + dy).0[0]);
        at(0, 0) * (1.0 - fx) * (1.0 - fy)
            + at(1, 0) * fx * (1.0 - fy)
            + at(0, 1) * (1.0 - fx) * fy
            + at(1, 1) * fx * fy
    };
    GrayImage::from_fn(w, h, |x, y| {
        let (dx, dy) = (f64::from(x) - cx, f64::from(y) - cy);
        // The source of each destination pixel: the inverse rotation.
        let source_x = cos * dx + sin * dy + cx;
        let source_y = -sin * dx + cos * dy + cy;
        Luma([sample(source_x, source_y).round().clamp(0.0, 255.0) as u8])
    })
}
