use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::verify::IMAGES_BODY_LIMIT;
use super::views::{LivenessSignalsBody, check};
use crate::context::AppContext;
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
    /// `false` when a replay or print cue was found.
    is_live: bool,
    /// Never above 0.95 (the reliability line of the spec): heuristics alone cannot be sure.
    confidence: f64,
    /// `screen_replay`, `printed_photo`, or `undetermined` when no cue was found.
    spoof_type: String,
    /// `failed` or `inconclusive`.
    check: &'static str,
    /// What each signal said.
    notes: Vec<String>,
    #[schema(required = true)]
    challenge: Option<String>,
    #[schema(required = true)]
    signals: Option<LivenessSignalsBody>,
    /// Time spent analysing, e.g. `42ms`.
    processing_time: String,
}

/// Judges one image for presentation attacks (printed photos, screen replays) from model-free
/// signals, answered at once. Not stored, not billed.
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
    context: web::Data<AppContext>,
    signed: Signed<IMAGES_BODY_LIMIT>,
) -> Result<HttpResponse, ApiError> {
    let body: LivenessBody = signed.json()?;
    let answer = context
        .identity
        .liveness(&body.image, body.challenge.as_deref())
        .await?;
    let verdict = answer.verdict;
    Ok(respond(
        StatusCode::OK,
        "Liveness",
        LivenessResult {
            is_live: verdict.is_live,
            confidence: verdict.confidence,
            spoof_type: verdict.spoof_type,
            check: check(verdict.check),
            notes: verdict.notes,
            challenge: answer.challenge,
            signals: answer.signals.as_ref().map(LivenessSignalsBody::of),
            processing_time: format!("{}ms", answer.processing_time.as_millis()),
        },
    ))
}
