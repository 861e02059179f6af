use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_verification::VerificationService;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::requester;
use super::verify::IMAGES_BODY_LIMIT;
use super::views::{LivenessSignalsBody, check};
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, ToSchema)]
pub struct LivenessBody {
    /// Base64 of a JPEG, PNG or WebP image or video frame; at most 10 MiB decoded.
    image: String,
    /// `blink`, `smile` or `turn_head`: recorded, not judged (one frame cannot show it).
    challenge: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LivenessResult {
    /// `true` only when liveness was proven (`check: passed`) — which model-free heuristics
    /// never do, so today always `false`: read `check` and `reason` for what was found.
    is_live: bool,
    /// How sure the service is of `check`: 0.6–0.9 for a found cue (never the spec's reliable
    /// 0.95); 0 when `inconclusive` (nothing was concluded).
    confidence: f64,
    /// The attack a found cue points to: `screen_replay` or `printed_photo`; `null` when none
    /// was found.
    #[schema(required = true)]
    spoof_type: Option<&'static str>,
    /// `failed` (a cue was found) or `inconclusive`; `passed` is never given today.
    check: &'static str,
    /// Why: `spoof_detected` (failed); `too_small` (under 320 × 240), `too_blurred` (blurred
    /// or blank), `no_face` (the face detector found none), `no_spoof_cue` (a clean frame
    /// without a cue is no proof of life) or `not_measured` (inconclusive).
    reason: &'static str,
    /// What each signal said.
    notes: Vec<String>,
    #[schema(required = true)]
    challenge: Option<String>,
    #[schema(required = true)]
    signals: Option<LivenessSignalsBody>,
    /// Asked with a sandbox key: the same analysis, never billed (CONTRACT §7).
    sandbox: bool,
    /// Time spent analysing, e.g. `42ms`.
    processing_time: String,
}

/// Judges one image for presentation attacks (printed photos, screen replays) from model-free
/// signals, answered at once. Not stored, not billed. Never says live without proof: a frame
/// without a cue is `inconclusive`, with the reason.
#[utoipa::path(
    tag = "identity",
    security(("signedRequest" = [])),
    request_body = LivenessBody,
    responses(
        (status = 200, description = "The judgement", body = Envelope<LivenessResult>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 413, description = "The image is over 10 MiB", body = ErrorBody),
        (status = 422, description = "Not a JPEG, PNG or WebP image, or an unknown challenge", body = ErrorBody)
    )
)]
#[post("/v1/identity/biometrics/liveness")]
pub async fn liveness(
    identity: web::Data<VerificationService>,
    signed: Signed<IMAGES_BODY_LIMIT>,
) -> Result<HttpResponse, ApiError> {
    let body: LivenessBody = signed.json()?;
    let answer = identity
        .liveness(
            &requester(&signed.caller),
            &body.image,
            body.challenge.as_deref(),
        )
        .await?;
    let verdict = answer.verdict;
    Ok(respond(
        StatusCode::OK,
        "Liveness",
        LivenessResult {
            is_live: verdict.is_live(),
            confidence: verdict.confidence,
            spoof_type: verdict.spoof_type.map(|kind| kind.as_str()),
            check: check(verdict.check),
            reason: verdict.reason.as_str(),
            notes: verdict.notes,
            challenge: answer.challenge,
            signals: answer.signals.as_ref().map(LivenessSignalsBody::of),
            sandbox: answer.sandbox,
            processing_time: format!("{}ms", answer.processing_time.as_millis()),
        },
    ))
}
