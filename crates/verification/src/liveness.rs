//! Liveness from model-free signals. No anti-spoofing model that may be shipped exists in the
//! registries this service can use, so heuristics can only *find* a replay or a print; they
//! can never prove a live person. Hence: a detected cue → `failed` with its `spoofType`; no
//! cue → `inconclusive`, `spoofType: "undetermined"`, and a confidence well below the 0.95 the
//! spec calls reliable (docs/identity.md).

use serde::Serialize;

use crate::model::{CheckResult, LivenessSignals};

/// A screen photographed: a spectral peak this many times the power around it.
pub const MOIRE_SCREEN: f64 = 40.0;
/// A halftone print: a peak *and* its perpendicular twin this many times the power around
/// them (a dot grid is periodic in two directions, a screen's moiré in one).
pub const HALFTONE_PRINT: f64 = 40.0;
/// Below this Laplacian variance an image is too blurred to judge.
pub const SHARPNESS_MIN: f64 = 15.0;
/// Below this many pixels (320 × 240) an image is too small to judge.
pub const PIXELS_MIN: u64 = 76_800;
/// The most confidence heuristics may claim for "no spoof cue found".
pub const HEURISTIC_CEILING: f64 = 0.5;

/// The challenges a client may say it asked for (spec §2.7). A single frame cannot show a
/// blink or a turn, so a challenge is recorded, never counted as evidence.
pub const CHALLENGES: [&str; 3] = ["blink", "smile", "turn_head"];

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LivenessVerdict {
    pub check: CheckResult,
    pub is_live: bool,
    pub confidence: f64,
    /// `screen_replay`, `printed_photo`, or `undetermined` when nothing was detected.
    pub spoof_type: String,
    /// What each signal said, in words.
    pub notes: Vec<String>,
}

/// Judges the signals of one image.
pub fn judge(signals: &LivenessSignals) -> LivenessVerdict {
    let mut notes = Vec::new();
    // The grid first: a print's grid also has the single strong peak of a screen.
    if signals.halftone >= HALFTONE_PRINT {
        notes.push(format!(
            "a two-directional dot grid {:.0}× the power around it (≥ {HALFTONE_PRINT}): a printed photo",
            signals.halftone
        ));
        return spoof(
            "printed_photo",
            strength(signals.halftone / HALFTONE_PRINT),
            notes,
        );
    }
    if signals.moire >= MOIRE_SCREEN {
        notes.push(format!(
            "a periodic moiré peak {:.0}× the power around it (≥ {MOIRE_SCREEN}): a photographed screen",
            signals.moire
        ));
        return spoof(
            "screen_replay",
            strength(signals.moire / MOIRE_SCREEN),
            notes,
        );
    }
    let mut confidence = HEURISTIC_CEILING;
    if signals.pixels < PIXELS_MIN {
        notes.push("image smaller than 320 × 240: too small to judge".into());
        confidence = 0.2;
    }
    if signals.sharpness < SHARPNESS_MIN {
        notes.push(format!(
            "blurred (sharpness {:.1} < {SHARPNESS_MIN}): detail needed to see a replay is missing",
            signals.sharpness
        ));
        confidence = confidence.min(0.3);
    }
    if signals.screen_sized {
        notes.push("exactly a screen's resolution: possibly a screenshot".into());
        confidence = confidence.min(0.3);
    }
    if let Some(quality) = signals.jpeg_quality.filter(|quality| *quality < 50) {
        notes.push(format!(
            "JPEG quality {quality}: re-encoded several times, detail lost"
        ));
        confidence = confidence.min(0.3);
    }
    notes.push("no replay or print cue found; heuristics cannot confirm a live person".into());
    LivenessVerdict {
        check: CheckResult::Inconclusive,
        is_live: true,
        confidence,
        spoof_type: "undetermined".into(),
        notes,
    }
}

/// Confidence in a detected spoof: grows with how far past its threshold the signal is, and
/// stays under the reliability line (0.95) — a heuristic is never certain.
fn strength(ratio: f64) -> f64 {
    (0.6 + 0.1 * (ratio - 1.0)).clamp(0.6, 0.9)
}

fn spoof(kind: &str, confidence: f64, notes: Vec<String>) -> LivenessVerdict {
    LivenessVerdict {
        check: CheckResult::Failed,
        is_live: false,
        confidence,
        spoof_type: kind.into(),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals() -> LivenessSignals {
        LivenessSignals {
            moire: 6.0,
            halftone: 2.0,
            sharpness: 120.0,
            pixels: 640 * 480,
            screen_sized: false,
            jpeg_quality: Some(90),
        }
    }

    #[test]
    fn no_cue_is_inconclusive_and_never_reliable() {
        let verdict = judge(&signals());
        assert_eq!(verdict.check, CheckResult::Inconclusive);
        assert_eq!(verdict.spoof_type, "undetermined");
        assert!(verdict.confidence <= HEURISTIC_CEILING);
    }

    #[test]
    fn a_screen_or_a_print_is_named_and_below_the_reliable_line() {
        for (signals, kind) in [
            (
                LivenessSignals {
                    moire: 400.0,
                    ..signals()
                },
                "screen_replay",
            ),
            (
                LivenessSignals {
                    moire: 400.0,
                    halftone: 90.0,
                    ..signals()
                },
                "printed_photo",
            ),
        ] {
            let verdict = judge(&signals);
            assert_eq!(verdict.check, CheckResult::Failed);
            assert_eq!(verdict.spoof_type, kind);
            assert!(!verdict.is_live);
            assert!(verdict.confidence < 0.95);
        }
    }

    #[test]
    fn poor_images_lower_the_confidence() {
        let blurred = judge(&LivenessSignals {
            sharpness: 2.0,
            ..signals()
        });
        assert!(blurred.confidence < HEURISTIC_CEILING);
        let tiny = judge(&LivenessSignals {
            pixels: 100 * 100,
            ..signals()
        });
        assert!(tiny.confidence < blurred.confidence);
    }
}
