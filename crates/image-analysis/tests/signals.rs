//! The signals on generated images: a natural-looking scene, the same scene as a photographed
//! screen (one-directional moiré) and as a halftone print (a dot grid), judged by the domain's
//! liveness rule. The images are made here, at test time, from a seeded generator.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use idconsent_image_analysis::{ImageAnalysis, MAX_SIDE};
use idconsent_verification::liveness::judge;
use idconsent_verification::{CheckResult, ImageAnalyzer, ImageRejection};
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
fn scene(seed: u64, width: u32, height: u32) -> Vec<f64> {
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

fn encode(width: u32, height: u32, values: &[f64], format: ImageFormat) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        let v = values[(y * width + x) as usize] as u8;
        image::Rgb([v, v.saturating_sub(12), v.saturating_sub(25)])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

const W: u32 = 640;
const H: u32 = 480;

fn natural(seed: u64) -> Vec<u8> {
    encode(W, H, &scene(seed, W, H), ImageFormat::Jpeg)
}

/// The scene through a screen: bright and dark bands a few pixels apart, slightly tilted.
fn screen(seed: u64) -> Vec<u8> {
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
fn print(seed: u64) -> Vec<u8> {
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

#[tokio::test]
async fn a_natural_scene_shows_no_cue_and_stays_inconclusive() {
    for seed in 1..=5 {
        let signals = ImageAnalysis
            .liveness_signals(&natural(seed))
            .await
            .unwrap();
        let verdict = judge(&signals);
        assert_eq!(verdict.check, CheckResult::Inconclusive, "{signals:?}");
        assert_eq!(verdict.spoof_type, "undetermined");
        assert!(verdict.confidence <= 0.5);
        assert_eq!(signals.pixels, 640 * 480);
        assert!(signals.jpeg_quality.is_some_and(|q| q > 60));
    }
}

#[tokio::test]
async fn a_photographed_screen_is_a_screen_replay() {
    for seed in 1..=5 {
        let signals = ImageAnalysis.liveness_signals(&screen(seed)).await.unwrap();
        let verdict = judge(&signals);
        assert_eq!(verdict.spoof_type, "screen_replay", "{signals:?}");
        assert_eq!(verdict.check, CheckResult::Failed);
        assert!(verdict.confidence < 0.95);
    }
}

#[tokio::test]
async fn a_halftone_print_is_a_printed_photo() {
    for seed in 1..=5 {
        let signals = ImageAnalysis.liveness_signals(&print(seed)).await.unwrap();
        let verdict = judge(&signals);
        assert_eq!(verdict.spoof_type, "printed_photo", "{signals:?}");
        assert!(!verdict.is_live);
    }
}

#[tokio::test]
async fn the_same_bytes_give_the_same_signals() {
    let image = screen(7);
    let first = ImageAnalysis.liveness_signals(&image).await.unwrap();
    assert_eq!(ImageAnalysis.liveness_signals(&image).await.unwrap(), first);
}

#[tokio::test]
async fn only_whole_images_within_bounds_are_accepted() {
    let facts = ImageAnalysis.inspect(&natural(1)).await.unwrap();
    assert_eq!((facts.width, facts.height), (640, 480));
    let png = encode(W, H, &scene(1, W, H), ImageFormat::Png);
    assert!(ImageAnalysis.inspect(&png).await.is_ok());
    let webp = encode(W, H, &scene(1, W, H), ImageFormat::WebP);
    assert!(ImageAnalysis.inspect(&webp).await.is_ok());

    let truncated = &natural(1)[..2_000];
    assert_eq!(
        ImageAnalysis.inspect(truncated).await,
        Err(ImageRejection::NotAnImage)
    );
    assert_eq!(
        ImageAnalysis.inspect(b"GIF89a not accepted").await,
        Err(ImageRejection::NotAnImage)
    );
    let wide = RgbImage::new(MAX_SIDE + 1, 1);
    let mut bytes = std::io::Cursor::new(Vec::new());
    wide.write_to(&mut bytes, ImageFormat::Png).unwrap();
    assert_eq!(
        ImageAnalysis.inspect(&bytes.into_inner()).await,
        Err(ImageRejection::TooLarge { max: MAX_SIDE })
    );
    let tiny = encode(32, 32, &[128.0; 32 * 32], ImageFormat::Png);
    assert_eq!(
        ImageAnalysis.inspect(&tiny).await,
        Err(ImageRejection::TooSmall { min: 64 })
    );
}

#[tokio::test]
#[ignore = "prints the calibration table of docs/identity.md"]
async fn calibration() {
    for (name, make) in [
        ("natural", natural as fn(u64) -> Vec<u8>),
        ("screen", screen),
        ("print", print),
    ] {
        for seed in 1..=20 {
            let signals = ImageAnalysis.liveness_signals(&make(seed)).await.unwrap();
            println!("{name}\t{seed}\t{}\t{}", signals.moire, signals.halftone);
        }
    }
}
