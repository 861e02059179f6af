use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, web};
use idconsent_kernel::Timestamp;
use idconsent_verification::{ChipInput, SubmitVerification, VerificationService};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::requester;
use super::views::VerificationStatus;
use crate::http::auth::{JsonReply, Signed};
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// The body limit of this endpoint: three images of at most 10 MiB are about 40 MiB of base64,
/// plus the rest of the JSON. Between this and the decoded limit the service answers 413.
pub const IMAGES_BODY_LIMIT: usize = 42 << 20;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyIdentityBody {
    /// `passport`, `national_id` or `drivers_license`.
    document_type: String,
    /// Base64 of a JPEG, PNG or WebP image (a `data:image/…;base64,` prefix is accepted); at
    /// most 10 MiB decoded.
    document_front: String,
    /// Required for `national_id` (its MRZ) and `drivers_license` (its PDF417 barcode).
    document_back: Option<String>,
    /// Base64 of the holder's selfie.
    selfie: String,
    /// ISO 3166-1 alpha-2, upper case.
    country: String,
    /// The files read from the document's chip over NFC (passports and ID cards): with a CSCA
    /// the server trusts, the only way `documentAuthenticity` passes (docs/identity.md).
    chip: Option<ChipBody>,
    /// The checks that must pass for `verified` (default `documentAuthenticity`, `faceMatch`,
    /// `dataExtraction`; `livenessDetection` only when named). Never empty.
    required_checks: Option<Vec<String>>,
    /// Default `true`: a chip's authenticity passes only when the chip proved it is not a copy
    /// (active authentication). `false` accepts passive authentication alone.
    require_clone_detection: Option<bool>,
}

/// Each file the base64 of its whole TLV as read from the chip (tag included).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChipBody {
    /// EF.DG1 (tag 0x61): the MRZ.
    dg1: String,
    /// EF.DG2 (tag 0x75): the portrait.
    dg2: String,
    /// EF.DG11 (tag 0x6B): additional personal details.
    dg11: Option<String>,
    /// EF.DG14 (tag 0x6E): security infos.
    dg14: Option<String>,
    /// EF.DG15 (tag 0x6F): the active-authentication public key.
    dg15: Option<String>,
    /// EF.SOD (tag 0x77): the document security object.
    sod: String,
    /// The chip's answer to a challenge from `POST /v1/identity/chip-challenge`.
    active_authentication: Option<ActiveAuthenticationBody>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ActiveAuthenticationBody {
    /// Base64 of the 8 bytes issued.
    challenge: String,
    /// Base64 of the chip's signature.
    signature: String,
}

impl From<ChipBody> for ChipInput {
    fn from(body: ChipBody) -> Self {
        ChipInput {
            dg1: body.dg1,
            dg2: body.dg2,
            dg11: body.dg11,
            dg14: body.dg14,
            dg15: body.dg15,
            sod: body.sod,
            active_authentication: body
                .active_authentication
                .map(|answer| (answer.challenge, answer.signature)),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationCreated {
    /// `idv_…`
    verification_id: String,
    /// `processing`.
    status: &'static str,
    /// How long analysis usually takes, e.g. `10s`.
    estimated_time: &'static str,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
}

/// Submits a document and a selfie for verification. Analysis runs in the background; the
/// result comes as `verification.completed` and from the status endpoint. Honours
/// `Idempotency-Key`; counts against the monthly verification quota (live keys only).
#[utoipa::path(
    tag = "identity",
    security(("signedRequest" = [])),
    request_body = VerifyIdentityBody,
    responses(
        (status = 201, description = "Accepted for analysis", body = Envelope<VerificationCreated>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with another body", body = ErrorBody),
        (status = 413, description = "An image is over 10 MiB", body = ErrorBody),
        (status = 422, description = "Unknown document type or country, a missing back, an image that does not decode within the bounds (size, pixels, sides at most 4:1), a chip file that is not one TLV with its tag within its bound, an unknown or empty `requiredChecks`, or an active-authentication challenge this application does not hold (never issued, expired, used)", body = ErrorBody),
        (status = 429, description = "The monthly verification quota is used up, or (sandbox keys) the application's verifications for the UTC day; `Retry-After` says when", body = ErrorBody)
    )
)]
#[post("/v1/identity/verify")]
pub async fn submit(
    identity: web::Data<VerificationService>,
    signed: Signed<IMAGES_BODY_LIMIT>,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent("POST /v1/identity/verify", || async {
            let body: VerifyIdentityBody = signed.json()?;
            let identity = &identity;
            let verification = identity
                .submit(
                    &requester(&signed.caller),
                    SubmitVerification {
                        document_type: body.document_type,
                        document_front: body.document_front,
                        document_back: body.document_back,
                        selfie: body.selfie,
                        country: body.country,
                        chip: body.chip.map(ChipInput::from),
                        required_checks: body.required_checks,
                        require_clone_detection: body.require_clone_detection,
                    },
                )
                .await?;
            JsonReply::envelope(
                StatusCode::CREATED,
                "Verification started",
                VerificationCreated {
                    verification_id: verification.id.to_string(),
                    status: verification.status().as_str(),
                    estimated_time: identity.estimated_time(),
                    created_at: verification.created_at,
                },
            )
        })
        .await
}

/// A verification of the calling application: `processing` until analysed, then `verified`,
/// `rejected` or `needs_review` with every check and why it came out so.
#[utoipa::path(
    tag = "identity",
    security(("signedRequest" = [])),
    params(("verificationId" = String, Path, description = "`idv_…`")),
    responses(
        (status = 200, description = "The verification", body = Envelope<VerificationStatus>),
        (status = 404, description = "No such verification for this application", body = ErrorBody)
    )
)]
#[get("/v1/identity/verify/{verificationId}")]
pub async fn get(
    identity: web::Data<VerificationService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let verification = identity.get(&requester(&signed.caller), &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Verification",
        VerificationStatus::of(&verification),
    ))
}
