#![doc = include_str!("../README.md")]

use std::fmt::Write as _;

use idconsent_kernel::qr::{ErrorCorrection, QrError, QrFormat, QrOptions, QrRenderer};
use qrcodegen::{Mask, QrCode, QrCodeEcc, QrSegment, Version};

/// Modules of white border on every side (the QR specification's minimum).
pub const QUIET_ZONE: i32 = 4;

/// Which of the eight mask patterns to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaskChoice {
    /// Evaluate all eight and keep the one with the lowest penalty (the specification's way).
    Optimal,
    /// Use one pattern: every decoder reads any mask, and it skips seven evaluations.
    Fixed(u8),
}

#[derive(Debug, Clone, Copy)]
pub struct QrCodegenRenderer {
    mask: MaskChoice,
}

impl QrCodegenRenderer {
    pub fn new(mask: MaskChoice) -> Self {
        Self { mask }
    }

    /// The module matrix of `data`.
    pub fn encode(&self, data: &str, level: ErrorCorrection) -> Result<QrCode, QrError> {
        let segments = QrSegment::make_segments(data);
        let mask = match self.mask {
            MaskChoice::Optimal => None,
            MaskChoice::Fixed(pattern) => Some(Mask::new(pattern.min(7))),
        };
        QrCode::encode_segments_advanced(
            &segments,
            ecc(level),
            Version::MIN,
            Version::MAX,
            mask,
            true,
        )
        .map_err(|_| QrError::TooLong)
    }
}

impl Default for QrCodegenRenderer {
    /// A fixed mask: the optimal-mask search costs about twenty times the rest of the encoding
    /// (docs/performance.md), and every decoder reads every mask (tested for all eight).
    fn default() -> Self {
        Self::new(MaskChoice::Fixed(2))
    }
}

fn ecc(level: ErrorCorrection) -> QrCodeEcc {
    match level {
        ErrorCorrection::Low => QrCodeEcc::Low,
        ErrorCorrection::Medium => QrCodeEcc::Medium,
        ErrorCorrection::Quartile => QrCodeEcc::Quartile,
        ErrorCorrection::High => QrCodeEcc::High,
    }
}

impl QrRenderer for QrCodegenRenderer {
    fn render(
        &self,
        data: &str,
        format: QrFormat,
        options: &QrOptions,
    ) -> Result<Vec<u8>, QrError> {
        if !(QrOptions::MIN_SIZE..=QrOptions::MAX_SIZE).contains(&options.size) {
            return Err(QrError::Size);
        }
        let code = self.encode(data, options.error_correction)?;
        match format {
            QrFormat::Png => png(&code, options.size),
            QrFormat::Svg => Ok(svg(&code, options.size).into_bytes()),
        }
    }
}

/// Where the code sits in a `size`-pixel square: pixels per module and the offset of the
/// top-left module (quiet zone included).
fn layout(code: &QrCode, size: u32) -> Result<(u32, u32), QrError> {
    let modules = (code.size() + 2 * QUIET_ZONE) as u32;
    let scale = size / modules;
    if scale == 0 {
        return Err(QrError::Size);
    }
    let offset = (size - modules * scale) / 2 + QUIET_ZONE as u32 * scale;
    Ok((scale, offset))
}

/// A 1-bit grayscale PNG (1 = white), painted one module row at a time.
///
/// Each module row is drawn once and copied to its `scale` pixel rows. The image data uses the
/// PNG "Up" filter, which turns every repeated row into zeros, and fdeflate's fastest mode
/// ([`png::Compression::Fastest`]): about a third of the time of the adaptive filter the
/// `Fast` preset picks, for a file of the same size (docs/performance.md).
pub fn png(code: &QrCode, size: u32) -> Result<Vec<u8>, QrError> {
    let (scale, offset) = layout(code, size)?;
    let row_bytes = size.div_ceil(8) as usize;
    let modules = code.size() as u32;
    let mut pixels = vec![0xFFu8; row_bytes * size as usize];
    let mut row = vec![0xFFu8; row_bytes];
    for module_y in 0..modules {
        row.fill(0xFF);
        for module_x in 0..modules {
            if code.get_module(module_x as i32, module_y as i32) {
                clear_bits(&mut row, offset + module_x * scale, scale);
            }
        }
        let top = (offset + module_y * scale) as usize;
        for line in
            pixels[top * row_bytes..(top + scale as usize) * row_bytes].chunks_exact_mut(row_bytes)
        {
            line.copy_from_slice(&row);
        }
    }
    let mut out = Vec::with_capacity(pixels.len() / 4 + 128);
    let mut encoder = png::Encoder::new(&mut out, size, size);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::One);
    encoder.set_compression(png::Compression::Fastest);
    let written = encoder.write_header().and_then(|mut writer| {
        writer
            .write_image_data(&pixels)
            .and_then(|()| writer.finish())
    });
    // Writing into a Vec cannot fail for I/O reasons; a failure would be a size bug.
    written.map_err(|_| QrError::Size)?;
    Ok(out)
}

/// Clears (paints black) `count` pixels of a 1-bit row from pixel `start`, most significant
/// bit first.
fn clear_bits(row: &mut [u8], start: u32, count: u32) {
    let (mut bit, end) = (start as usize, (start + count) as usize);
    while bit < end && bit % 8 != 0 {
        row[bit / 8] &= !(0x80 >> (bit % 8));
        bit += 1;
    }
    while bit + 8 <= end {
        row[bit / 8] = 0;
        bit += 8;
    }
    while bit < end {
        row[bit / 8] &= !(0x80 >> (bit % 8));
        bit += 1;
    }
}

/// An SVG with one path; each row's dark runs are merged into single rectangles.
pub fn svg(code: &QrCode, size: u32) -> String {
    let modules = code.size() + 2 * QUIET_ZONE;
    let mut path = String::with_capacity(64 * code.size() as usize);
    for y in 0..code.size() {
        let mut x = 0;
        while x < code.size() {
            if code.get_module(x, y) {
                let start = x;
                while x < code.size() && code.get_module(x, y) {
                    x += 1;
                }
                let _ = write!(
                    path,
                    "M{},{}h{}v1h-{}z",
                    start + QUIET_ZONE,
                    y + QUIET_ZONE,
                    x - start,
                    x - start
                );
            } else {
                x += 1;
            }
        }
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{size}\" height=\"{size}\" \
         viewBox=\"0 0 {modules} {modules}\" shape-rendering=\"crispEdges\">\
         <rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/><path fill=\"#000000\" d=\"{path}\"/></svg>"
    )
}

/// The resvg route: rasterise the SVG (for the benchmark's comparison only).
#[cfg(feature = "resvg-compare")]
pub fn png_via_resvg(code: &QrCode, size: u32) -> Vec<u8> {
    let svg = svg(code, size);
    let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size, size).unwrap_or_else(|| panic!("pixmap"));
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(png: &[u8]) -> String {
        let image = image::load_from_memory(png).unwrap().to_luma8();
        let mut prepared = rqrr::PreparedImage::prepare(image);
        let grids = prepared.detect_grids();
        assert_eq!(grids.len(), 1, "one code in the image");
        grids[0].decode().unwrap().1
    }

    const PAYLOAD: &str = "idconsent://auth/cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN";

    #[test]
    fn png_decodes_to_the_payload_at_every_size_and_level() {
        for mask in [MaskChoice::Optimal, MaskChoice::Fixed(0)] {
            let renderer = QrCodegenRenderer::new(mask);
            for (size, level) in [
                (128, ErrorCorrection::Low),
                (256, ErrorCorrection::Medium),
                (512, ErrorCorrection::High),
            ] {
                let png = renderer
                    .render(
                        PAYLOAD,
                        QrFormat::Png,
                        &QrOptions {
                            size,
                            error_correction: level,
                        },
                    )
                    .unwrap();
                assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
                let image = image::load_from_memory(&png).unwrap();
                assert_eq!((image.width(), image.height()), (size, size));
                assert_eq!(decode(&png), PAYLOAD);
            }
        }
    }

    #[test]
    fn png_pixels_are_exactly_the_modules_with_the_quiet_zone() {
        let renderer = QrCodegenRenderer::default();
        let code = renderer.encode(PAYLOAD, ErrorCorrection::Medium).unwrap();
        // Widths that are and are not multiples of 8 and of the module count.
        for size in [100, 256, 333] {
            let png = png(&code, size).unwrap();
            let image = image::load_from_memory(&png).unwrap().to_luma8();
            let (scale, offset) = layout(&code, size).unwrap();
            let end = offset + code.size() as u32 * scale;
            for (x, y, pixel) in image.enumerate_pixels() {
                let dark = (offset..end).contains(&x)
                    && (offset..end).contains(&y)
                    && code
                        .get_module(((x - offset) / scale) as i32, ((y - offset) / scale) as i32);
                assert_eq!(pixel.0[0] == 0, dark, "size {size}, pixel ({x}, {y})");
            }
        }
    }

    #[test]
    fn every_fixed_mask_decodes_across_payloads() {
        let random: std::sync::Arc<dyn idconsent_kernel::RandomSource> =
            std::sync::Arc::new(idconsent_kernel::SeededRandom::new(11));
        for pattern in 0..8 {
            let renderer = QrCodegenRenderer::new(MaskChoice::Fixed(pattern));
            for _ in 0..6 {
                let payload = format!("idconsent://auth/cs_{}", random.hex(18).to_uppercase());
                let png = renderer
                    .render(&payload, QrFormat::Png, &QrOptions::default())
                    .unwrap();
                assert_eq!(decode(&png), payload, "mask {pattern}");
            }
        }
    }

    #[test]
    fn svg_is_square_and_draws_the_same_modules() {
        let renderer = QrCodegenRenderer::new(MaskChoice::Optimal);
        let svg = String::from_utf8(
            renderer
                .render(PAYLOAD, QrFormat::Svg, &QrOptions::default())
                .unwrap(),
        )
        .unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("width=\"256\" height=\"256\""));
        let code = renderer.encode(PAYLOAD, ErrorCorrection::Medium).unwrap();
        let dark: i32 = (0..code.size())
            .flat_map(|y| (0..code.size()).map(move |x| (x, y)))
            .filter(|(x, y)| code.get_module(*x, *y))
            .count() as i32;
        let drawn: i32 = svg
            .split('M')
            .skip(1)
            .map(|run| {
                run.split('h')
                    .nth(1)
                    .unwrap()
                    .split('v')
                    .next()
                    .unwrap()
                    .parse::<i32>()
                    .unwrap()
            })
            .sum();
        assert_eq!(drawn, dark);
    }

    #[test]
    fn output_is_deterministic() {
        let renderer = QrCodegenRenderer::default();
        let options = QrOptions::default();
        assert_eq!(
            renderer.render(PAYLOAD, QrFormat::Png, &options).unwrap(),
            renderer.render(PAYLOAD, QrFormat::Png, &options).unwrap()
        );
    }

    #[test]
    fn refuses_bad_sizes_and_too_much_data() {
        let renderer = QrCodegenRenderer::default();
        let small = QrOptions {
            size: 32,
            ..QrOptions::default()
        };
        assert_eq!(
            renderer.render(PAYLOAD, QrFormat::Png, &small),
            Err(QrError::Size)
        );
        let huge = "x".repeat(5000);
        assert_eq!(
            renderer.render(&huge, QrFormat::Png, &QrOptions::default()),
            Err(QrError::TooLong)
        );
        // A code too big for the square: 64 px cannot hold a version-20 code.
        let big = "y".repeat(800);
        let tiny = QrOptions {
            size: 64,
            error_correction: ErrorCorrection::Low,
        };
        assert_eq!(
            renderer.render(&big, QrFormat::Png, &tiny),
            Err(QrError::Size)
        );
    }
}
