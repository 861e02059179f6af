//! Liveness from model-free signals. No anti-spoofing model that may be shipped exists in the
//! registries this service can use, so heuristics can only *find* a replay or a print; they
//! can never prove a live person. Hence `is_live` is true only for `check: passed`, which no
//! rule here gives; a found cue is `failed` with its spoof type; everything else is
//! `inconclusive` with the reason — the frame too small or too blurred to judge, no face in
//! it, or a clean frame without a cue (docs/identity.md, "Liveness").

use serde::Serialize;

use crate::model::{CheckResult, LivenessSignals};

/// A screen photographed: a spectral peak this many times the power around it.
pub const MOIRE_SCREEN: f64 = 40.0;
/// A halftone print: a peak *and* its perpendicular twin this many times the power around
/// them (a dot grid is periodic in two directions, a screen's moiré in one).
pub const HALFTONE_PRINT: f64 = 40.0;
/// Below this Laplacian variance an image is too blurred (or too blank) to judge.
pub const SHARPNESS_MIN: f64 = 15.0;
/// Below this many pixels (320 × 240) an image is too small to judge.
pub const PIXELS_MIN: u64 = 76_800;

/// The challenges a client may say it asked for (spec §2.7). A single frame cannot show a
/// blink or a turn, so a challenge is recorded, never counted as evidence.
pub const CHALLENGES: [&str; 3] = ["blink", "smile", "turn_head"];

/// The presentation attack a cue points to (the answer's `spoofType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpoofType {
    ScreenReplay,
    PrintedPhoto,
}

impl SpoofType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ScreenReplay => "screen_replay",
            Self::PrintedPhoto => "printed_photo",
        }
    }
}

/// Why the check came out as it did (the answer's `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LivenessReason {
    /// `failed`: a presentation-attack cue was found; the spoof type names it.
    SpoofDetected,
    /// `inconclusive`: smaller than 320 × 240.
    TooSmall,
    /// `inconclusive`: too blurred — or blank — to show the detail a replay or print leaves.
    TooBlurred,
    /// `inconclusive`: the face detector found no face in the frame.
    NoFace,
    /// `inconclusive`: the frame could be examined and shows no cue, which heuristics cannot
    /// turn into proof of a live person.
    NoSpoofCue,
    /// `inconclusive`: the image could not be measured.
    NotMeasured,
}

impl LivenessReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SpoofDetected => "spoof_detected",
            Self::TooSmall => "too_small",
            Self::TooBlurred => "too_blurred",
            Self::NoFace => "no_face",
            Self::NoSpoofCue => "no_spoof_cue",
            Self::NotMeasured => "not_measured",
        }
    }
}

/// Whether the frame holds a face, as far as this installation can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FacePresence {
    Found,
    NotFound,
    /// No face detector ran (not part of this build, not installed, or it failed): why.
    NotChecked(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct LivenessVerdict {
    pub check: CheckResult,
    /// How sure the service is of `check`: for `failed`, how far past its threshold the cue is
    /// (0.6–0.9, never the spec's reliable 0.95); for `inconclusive`, 0 — nothing was concluded.
    pub confidence: f64,
    /// Set exactly when a cue was found.
    pub spoof_type: Option<SpoofType>,
    pub reason: LivenessReason,
    /// What each signal said, in words.
    pub notes: Vec<String>,
}

impl LivenessVerdict {
    /// Live only when liveness was proven: `check: passed`.
    pub fn is_live(&self) -> bool {
        self.check == CheckResult::Passed
    }

    /// The answer when the image could not be measured.
    pub fn not_measured(why: String) -> Self {
        inconclusive(LivenessReason::NotMeasured, vec![why])
    }
}

/// Judges one frame: [`judge_signals`], and when the signals alone decide nothing,
/// [`judge_clean_frame`] with what the face detector said.
pub fn judge(signals: &LivenessSignals, face: &FacePresence) -> LivenessVerdict {
    judge_signals(signals).unwrap_or_else(|| judge_clean_frame(signals, face))
}

/// What the signals alone decide: a frame too small or too blurred to judge (a spectral peak
/// in such a frame is noise, not evidence), else a print's dot grid or a screen's moiré.
/// `None` when the frame is clean and shows no cue — then whether it holds a face matters
/// ([`judge_clean_frame`]), and only then is it worth running a face detector.
pub fn judge_signals(signals: &LivenessSignals) -> Option<LivenessVerdict> {
    if signals.pixels < PIXELS_MIN {
        return Some(inconclusive(
            LivenessReason::TooSmall,
            vec!["image smaller than 320 × 240: too small to judge".into()],
        ));
    }
    if signals.sharpness < SHARPNESS_MIN {
        return Some(inconclusive(
            LivenessReason::TooBlurred,
            vec![format!(
                "too blurred or blank to judge (sharpness {:.1} < {SHARPNESS_MIN}): the detail a replay or print leaves is missing",
                signals.sharpness
            )],
        ));
    }
    // The grid first: a print's grid also has the single strong peak of a screen.
    if signals.halftone >= HALFTONE_PRINT {
        return Some(spoof(
            SpoofType::PrintedPhoto,
            signals.halftone / HALFTONE_PRINT,
            format!(
                "a two-directional dot grid {:.0}× the power around it (≥ {HALFTONE_PRINT}): a printed photo",
                signals.halftone
            ),
        ));
    }
    if signals.moire >= MOIRE_SCREEN {
        return Some(spoof(
            SpoofType::ScreenReplay,
            signals.moire / MOIRE_SCREEN,
            format!(
                "a periodic moiré peak {:.0}× the power around it (≥ {MOIRE_SCREEN}): a photographed screen",
                signals.moire
            ),
        ));
    }
    None
}

/// A clean frame without a cue: `no_face` when the detector found none, else `no_spoof_cue` —
/// inconclusive either way, with what else the signals hint at in the notes.
pub fn judge_clean_frame(signals: &LivenessSignals, face: &FacePresence) -> LivenessVerdict {
    let mut notes = Vec::new();
    let reason = match face {
        FacePresence::NotFound => {
            notes.push("no face found in the frame".into());
            LivenessReason::NoFace
        }
        FacePresence::Found => LivenessReason::NoSpoofCue,
        FacePresence::NotChecked(why) => {
            notes.push(format!(
                "whether the frame holds a face was not checked: {why}"
            ));
            LivenessReason::NoSpoofCue
        }
    };
    if signals.screen_sized {
        notes.push("exactly a screen's resolution: possibly a screenshot".into());
    }
    if let Some(quality) = signals.jpeg_quality.filter(|quality| *quality < 50) {
        notes.push(format!(
            "JPEG quality {quality}: re-encoded several times, detail lost"
        ));
    }
    notes.push("no replay or print cue found; heuristics cannot confirm a live person".into());
    inconclusive(reason, notes)
}

fn inconclusive(reason: LivenessReason, notes: Vec<String>) -> LivenessVerdict {
    LivenessVerdict {
        check: CheckResult::Inconclusive,
        confidence: 0.0,
        spoof_type: None,
        reason,
        notes,
    }
}

/// A found cue; its confidence grows with how far past its threshold the signal is (`ratio`)
/// and stays under the reliability line (0.95) — a heuristic is never certain.
fn spoof(kind: SpoofType, ratio: f64, note: String) -> LivenessVerdict {
    LivenessVerdict {
        check: CheckResult::Failed,
        confidence: (0.6 + 0.1 * (ratio - 1.0)).clamp(0.6, 0.9),
        spoof_type: Some(kind),
        reason: LivenessReason::SpoofDetected,
        notes: vec![note],
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

    fn all_faces() -> [FacePresence; 3] {
        [
            FacePresence::Found,
            FacePresence::NotFound,
            FacePresence::NotChecked("not part of this build".into()),
        ]
    }

    #[test]
    fn nothing_here_ever_says_live() {
        let frames = [
            signals(),
            LivenessSignals {
                sharpness: 0.0,
                moire: 0.0,
                halftone: 0.0,
                ..signals()
            },
            LivenessSignals {
                pixels: 100 * 100,
                ..signals()
            },
            LivenessSignals {
                moire: 400.0,
                ..signals()
            },
        ];
        for frame in &frames {
            for face in &all_faces() {
                let verdict = judge(frame, face);
                assert!(!verdict.is_live(), "{frame:?} {face:?}");
                assert_ne!(verdict.check, CheckResult::Passed);
                assert!(verdict.confidence < 0.95);
            }
        }
    }

    #[test]
    fn a_clean_frame_without_a_cue_is_inconclusive_with_nothing_concluded() {
        let checked = judge(&signals(), &FacePresence::Found);
        assert_eq!(checked.check, CheckResult::Inconclusive);
        assert_eq!(checked.reason, LivenessReason::NoSpoofCue);
        assert_eq!(checked.spoof_type, None);
        assert_eq!(checked.confidence, 0.0);
        let unchecked = judge(
            &signals(),
            &FacePresence::NotChecked("not part of this build".into()),
        );
        assert_eq!(unchecked.reason, LivenessReason::NoSpoofCue);
        assert!(unchecked.notes[0].contains("not part of this build"));
        let faceless = judge(&signals(), &FacePresence::NotFound);
        assert_eq!(faceless.reason, LivenessReason::NoFace);
        assert_eq!(faceless.check, CheckResult::Inconclusive);
    }

    #[test]
    fn a_screen_or_a_print_is_named_and_below_the_reliable_line() {
        for (signals, kind) in [
            (
                LivenessSignals {
                    moire: 400.0,
                    ..signals()
                },
                SpoofType::ScreenReplay,
            ),
            (
                LivenessSignals {
                    moire: 400.0,
                    halftone: 90.0,
                    ..signals()
                },
                SpoofType::PrintedPhoto,
            ),
        ] {
            for face in &all_faces() {
                let verdict = judge(&signals, face);
                assert_eq!(verdict.check, CheckResult::Failed);
                assert_eq!(verdict.spoof_type, Some(kind));
                assert_eq!(verdict.reason, LivenessReason::SpoofDetected);
                assert!((0.6..0.95).contains(&verdict.confidence));
            }
        }
    }

    #[test]
    fn a_frame_too_poor_to_judge_says_so_before_anything_else() {
        // A blank frame: no detail at all, and any "peak" in it would be noise.
        let blank = LivenessSignals {
            sharpness: 0.0,
            moire: 900.0,
            halftone: 0.0,
            ..signals()
        };
        let verdict = judge(&blank, &FacePresence::NotFound);
        assert_eq!(verdict.reason, LivenessReason::TooBlurred);
        assert_eq!(verdict.check, CheckResult::Inconclusive);
        assert_eq!(verdict.spoof_type, None);
        assert_eq!(verdict.confidence, 0.0);
        let tiny = LivenessSignals {
            pixels: 100 * 100,
            sharpness: 2.0,
            ..signals()
        };
        assert_eq!(
            judge(&tiny, &FacePresence::Found).reason,
            LivenessReason::TooSmall
        );
        // The face detector is not needed to decide these.
        assert!(judge_signals(&blank).is_some() && judge_signals(&tiny).is_some());
        assert!(judge_signals(&signals()).is_none());
    }
}
