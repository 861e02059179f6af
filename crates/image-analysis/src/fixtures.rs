//! Generated images for tests and load scripts: a soft, natural-looking scene (the stand-in
//! for a selfie), the same scene through a screen (one-directional moiré) and as a halftone
//! print (a dot grid), a blank frame and a scene out of focus. Seeded, so every run draws the
//! same pixels.

#![allow(clippy::unwrap_used)]

use image::{ImageFormat, RgbImage};

/// A deterministic pseudo-random sequence in [0, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Brightness 0–255 of a soft scene: a lit oval on a gradient, with sensor noise.
pub fn scene(seed: u64, width: u32, height: u32) -> Vec<f64> {
    let mut random = Lcg(seed);
    let (cx, cy) = (width as f64 / 2.0, height as f64 / 2.0);
    let mut values = Vec::with_capacity((width * height) as usize);
    for y in 0..height {
        for x in 0..width {
            let (dx, dy) = ((x as f64 - cx) / 140.0, (y as f64 - cy) / 180.0);
            let oval = (-(dx * dx + dy * dy)).exp() * 110.0;
            let gradient = 60.0 + 50.0 * y as f64 / height as f64;
            values.push((gradient + oval + (random.next() - 0.5) * 12.0).clamp(0.0, 255.0));
        }
    }
    values
}

pub fn encode(width: u32, height: u32, values: &[f64], format: ImageFormat) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        let v = values[(y * width + x) as usize] as u8;
        image::Rgb([v, v.saturating_sub(12), v.saturating_sub(25)])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// The fixtures' size.
pub const W: u32 = 640;
pub const H: u32 = 480;

pub fn natural(seed: u64) -> Vec<u8> {
    encode(W, H, &scene(seed, W, H), ImageFormat::Jpeg)
}

/// The scene through a screen: bright and dark bands a few pixels apart, slightly tilted.
pub fn screen(seed: u64) -> Vec<u8> {
    let values: Vec<f64> = scene(seed, W, H)
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (x, y) = ((i as u32 % W) as f64, (i as u32 / W) as f64);
            let band = (2.0 * std::f64::consts::PI * (x + 0.2 * y) / 5.3).sin();
            (v * (1.0 + 0.18 * band)).clamp(0.0, 255.0)
        })
        .collect();
    encode(W, H, &values, ImageFormat::Jpeg)
}

/// The scene printed: each 6 × 6 cell a dark dot sized by the cell's darkness.
pub fn print(seed: u64) -> Vec<u8> {
    let scene = scene(seed, W, H);
    let cell = 6.0;
    let values: Vec<f64> = (0..W * H)
        .map(|i| {
            let (x, y) = ((i % W) as f64, (i / W) as f64);
            let darkness = 1.0 - scene[i as usize] / 255.0;
            let (fx, fy) = (x % cell - cell / 2.0, y % cell - cell / 2.0);
            let radius = darkness.sqrt() * cell * 0.7;
            if (fx * fx + fy * fy).sqrt() < radius {
                30.0
            } else {
                235.0
            }
        })
        .collect();
    encode(W, H, &values, ImageFormat::Png)
}

/// A frame with nothing in it: one grey (a covered lens, a blank upload).
pub fn blank() -> Vec<u8> {
    encode(W, H, &vec![128.0; (W * H) as usize], ImageFormat::Jpeg)
}

/// The scene far out of focus (a Gaussian blur of σ = 6 px): no detail left to judge.
pub fn blurred(seed: u64) -> Vec<u8> {
    let sharp = image::load_from_memory(&natural(seed)).unwrap();
    let mut out = std::io::Cursor::new(Vec::new());
    sharp
        .blur(6.0)
        .to_rgb8()
        .write_to(&mut out, ImageFormat::Jpeg)
        .unwrap();
    out.into_inner()
}

/// A PNG of any shape, black and white stripes eight pixels wide across it (half of it ink to
/// an OCR clean-up): the shape of hostile uploads (issue 31: 64 × 8192).
pub fn stripes(width: u32, height: u32) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        let ink = ((x + y) / 8) % 2 == 0;
        image::Rgb(if ink { [0, 0, 0] } else { [255, 255, 255] })
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, ImageFormat::Png).unwrap();
    out.into_inner()
}
