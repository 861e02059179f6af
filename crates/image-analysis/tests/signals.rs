//! The signals on generated images (`fixtures`): a natural-looking scene, the same scene as a
//! photographed screen (one-directional moiré) and as a halftone print (a dot grid), judged by
//! the domain's liveness rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use idconsent_image_analysis::fixtures::{
    blank, blurred, encode, natural, print, scene, screen, stripes,
};
use idconsent_image_analysis::{ImageAnalysis, MAX_SIDE};
use idconsent_verification::liveness::{FacePresence, LivenessReason, SpoofType, judge};
use idconsent_verification::{CheckResult, ImageAnalyzer, ImageRejection};

/// What this adapter alone cannot tell.
fn unchecked() -> FacePresence {
    FacePresence::NotChecked("no face detector in this test".into())
}
use image::{ImageFormat, RgbImage};

#[tokio::test]
async fn a_natural_scene_shows_no_cue_and_stays_inconclusive() {
    for seed in 1..=5 {
        let signals = ImageAnalysis
            .liveness_signals(&natural(seed))
            .await
            .unwrap();
        let verdict = judge(&signals, &unchecked());
        assert_eq!(verdict.check, CheckResult::Inconclusive, "{signals:?}");
        assert_eq!(verdict.reason, LivenessReason::NoSpoofCue);
        assert_eq!(verdict.spoof_type, None);
        assert!(!verdict.is_live());
        assert_eq!(signals.pixels, 640 * 480);
        assert!(signals.jpeg_quality.is_some_and(|q| q > 60));
    }
}

#[tokio::test]
async fn a_photographed_screen_is_a_screen_replay() {
    for seed in 1..=5 {
        let signals = ImageAnalysis.liveness_signals(&screen(seed)).await.unwrap();
        let verdict = judge(&signals, &unchecked());
        assert_eq!(
            verdict.spoof_type,
            Some(SpoofType::ScreenReplay),
            "{signals:?}"
        );
        assert_eq!(verdict.check, CheckResult::Failed);
        assert!(verdict.confidence < 0.95);
    }
}

#[tokio::test]
async fn a_halftone_print_is_a_printed_photo() {
    for seed in 1..=5 {
        let signals = ImageAnalysis.liveness_signals(&print(seed)).await.unwrap();
        let verdict = judge(&signals, &unchecked());
        assert_eq!(
            verdict.spoof_type,
            Some(SpoofType::PrintedPhoto),
            "{signals:?}"
        );
        assert!(!verdict.is_live());
    }
}

#[tokio::test]
async fn a_blank_or_blurred_frame_is_too_blurred_to_judge() {
    let frames = [blank(), blurred(1), blurred(2), blurred(3)];
    for frame in frames {
        let signals = ImageAnalysis.liveness_signals(&frame).await.unwrap();
        let verdict = judge(&signals, &FacePresence::Found);
        assert_eq!(verdict.reason, LivenessReason::TooBlurred, "{signals:?}");
        assert_eq!(verdict.check, CheckResult::Inconclusive);
        assert!(!verdict.is_live());
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
    let png = encode(640, 480, &scene(1, 640, 480), ImageFormat::Png);
    assert!(ImageAnalysis.inspect(&png).await.is_ok());
    let webp = encode(640, 480, &scene(1, 640, 480), ImageFormat::WebP);
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
    // A small file claiming a huge canvas: refused from its header, before any decoding.
    let canvas = image::GrayImage::new(7_000, 6_000);
    let mut bomb = std::io::Cursor::new(Vec::new());
    canvas.write_to(&mut bomb, ImageFormat::Png).unwrap();
    assert_eq!(
        ImageAnalysis.inspect(&bomb.into_inner()).await,
        Err(ImageRejection::TooManyPixels { max: 40_000_000 })
    );
    let tiny = encode(32, 32, &[128.0; 32 * 32], ImageFormat::Png);
    assert_eq!(
        ImageAnalysis.inspect(&tiny).await,
        Err(ImageRejection::TooSmall { min: 64 })
    );
    // Strips (issue 31): within every other bound, refused for their shape; 4:1 still passes.
    for (width, height) in [(64, 8192), (8192, 64), (257, 1029)] {
        assert_eq!(
            ImageAnalysis.inspect(&stripes(width, height)).await,
            Err(ImageRejection::ExtremeShape { max_ratio: 4 }),
            "{width}x{height}"
        );
    }
    assert!(ImageAnalysis.inspect(&stripes(256, 1024)).await.is_ok());
    assert!(ImageAnalysis.inspect(&stripes(1024, 256)).await.is_ok());
}

#[tokio::test]
#[ignore = "prints the calibration table of docs/identity.md"]
async fn calibration() {
    for (name, make) in [
        ("natural", natural as fn(u64) -> Vec<u8>),
        ("screen", screen),
        ("print", print),
        ("blurred", blurred),
    ] {
        for seed in 1..=20 {
            let signals = ImageAnalysis.liveness_signals(&make(seed)).await.unwrap();
            let verdict = judge(&signals, &unchecked());
            println!(
                "{name}\t{seed}\tmoire {}\thalftone {}\tsharpness {}\t{}",
                signals.moire,
                signals.halftone,
                signals.sharpness,
                verdict.reason.as_str()
            );
        }
    }
}

#[tokio::test]
async fn the_analyzer_passes_the_image_analyzer_contract() {
    idconsent_verification::analysis_contract::image_analyzer(
        &ImageAnalysis,
        &[natural(1), screen(2), print(3)],
    )
    .await;
}
