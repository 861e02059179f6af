//! Generated documents for tests and load scripts — never real people's. A passport data page
//! and an ID-card back are drawn as SVG with the OCR-B font (Debian's `fonts-ocr-b`, installed
//! by `scripts/setup-identity.sh`), rendered by resvg, slightly tilted and saved as JPEG, as a
//! phone camera would deliver them.

use std::sync::Arc;

use base64::Engine;

use image::RgbaImage;

/// Where Debian's `fonts-ocr-b` puts the font.
pub const OCR_B_FONT: &str = "/usr/share/fonts/opentype/ocr-b/OCRB.otf";

/// A passport data page (ID-3, 125 × 88 mm at 10 px/mm) with `mrz` (two 44-character lines)
/// printed at the bottom and `photo` (PNG bytes), if any, in the portrait box. `tilt` in
/// degrees.
pub fn passport(mrz: &[String; 2], photo: Option<&[u8]>, tilt: f64) -> Result<Vec<u8>, String> {
    page(1250, 880, &mrz[..], 44, photo, tilt, "PASSPORT / PASSEPORT")
}

/// The back of an ID card (ID-1, 85.6 × 54 mm at 14 px/mm) with `mrz` (three 30-character
/// lines).
pub fn id_card_back(mrz: &[String; 3], tilt: f64) -> Result<Vec<u8>, String> {
    page(1198, 756, &mrz[..], 30, None, tilt, "")
}

fn page(
    width: u32,
    height: u32,
    mrz: &[String],
    line_length: usize,
    photo: Option<&[u8]>,
    tilt: f64,
    title: &str,
) -> Result<Vec<u8>, String> {
    let font = std::fs::read(OCR_B_FONT)
        .map_err(|_| format!("the OCR-B font is missing at {OCR_B_FONT}: install fonts-ocr-b"))?;
    // The zone spans the page less its margins: the font size follows from the line length
    // (OCR-B advances 0.723 em).
    let margin = 40.0;
    let size = (f64::from(width) - 2.0 * margin) / (line_length as f64 * 0.723);
    let line_gap = size * 1.45;
    let mut lines = String::new();
    for (n, line) in mrz.iter().enumerate() {
        let y = f64::from(height) - margin - (mrz.len() - 1 - n) as f64 * line_gap;
        lines.push_str(&format!(
            r##"<text x="{margin}" y="{y:.1}" font-family="OCR B" font-size="{size:.2}" fill="#141414">{}</text>"##,
            line.replace('<', "&lt;")
        ));
    }
    let portrait = match photo {
        Some(png) => format!(
            r#"<image x="40" y="130" width="300" height="380" preserveAspectRatio="xMidYMid slice" href="data:image/png;base64,{}"/>"#,
            base64::engine::general_purpose::STANDARD.encode(png)
        ),
        None => String::new(),
    };
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">
<rect width="100%" height="100%" fill="#f4f1ea"/>
<g transform="rotate({tilt} {cx} {cy})">
<rect x="10" y="10" width="{inner_w}" height="{inner_h}" fill="#eef3f6" stroke="#9bb" stroke-width="3"/>
<text x="40" y="90" font-family="OCR B" font-size="40" fill="#234">{title}</text>
<rect x="40" y="130" width="300" height="380" fill="#d9dde0"/>
{portrait}
{lines}
</g></svg>"##,
        cx = width / 2,
        cy = height / 2,
        inner_w = width - 20,
        inner_h = height - 20,
    );
    let mut options = resvg::usvg::Options::default();
    Arc::make_mut(&mut options.fontdb).load_font_data(font);
    let tree = resvg::usvg::Tree::from_str(&svg, &options).map_err(|error| error.to_string())?;
    let mut pixmap =
        resvg::tiny_skia::Pixmap::new(width, height).ok_or("the page has no pixels")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let rgba = RgbaImage::from_raw(width, height, pixmap.take())
        .ok_or("the rendered page has the wrong size")?;
    let rgb = image::DynamicImage::ImageRgba8(rgba).to_rgb8();
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 88)
        .encode_image(&rgb)
        .map_err(|error| error.to_string())?;
    Ok(jpeg)
}
