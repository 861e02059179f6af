//! The active-authentication challenge a wallet asks for before reading a chip (issue 33).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::Timestamp;
use idconsent_verification::VerificationService;
use serde::Serialize;
use utoipa::ToSchema;

use super::requester;
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChipChallengeCreated {
    /// Base64 of 8 random bytes: the chip signs them (ICAO 9303-11 active authentication) and
    /// the answer goes back as `chip.activeAuthentication` of `POST /v1/identity/verify`.
    challenge: String,
    /// Five minutes after issue; the challenge answers one verification of this application.
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
}

/// A fresh challenge for a chip's active authentication: bound to the calling application,
/// single use, valid five minutes. The body is ignored.
#[utoipa::path(
    tag = "identity",
    security(("signedRequest" = [])),
    responses(
        (status = 201, description = "Issued", body = Envelope<ChipChallengeCreated>),
        (status = 401, description = "Signature check failed", body = ErrorBody)
    )
)]
#[post("/v1/identity/chip-challenge")]
pub async fn challenge(
    identity: web::Data<VerificationService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let challenge = identity
        .issue_chip_challenge(&requester(&signed.caller))
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        "Chip challenge issued",
        ChipChallengeCreated {
            challenge: BASE64.encode(challenge.bytes()),
            expires_at: challenge.expires_at(),
        },
    ))
}
