use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_signature::SignatureService;
use serde::Deserialize;
use utoipa::ToSchema;

use super::read::SignatureStatus;
use super::requester;
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, ToSchema)]
pub struct SandboxSignBody {
    /// The signer to sign as.
    email: String,
}

/// Sandbox only (`mk_test_` keys): sign as one signer would, with the same events; the audit
/// trail records that the helper signed.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("signatureRequestId" = String, Path, description = "`sr_…`")),
    request_body = SandboxSignBody,
    responses(
        (status = 200, description = "Signed", body = Envelope<SignatureStatus>),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such request or signer for this application", body = ErrorBody),
        (status = 409, description = "No longer pending, or this signer already answered", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/signature/documents/{signatureRequestId}/sign")]
pub async fn sign(
    signatures: web::Data<SignatureService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let body: SandboxSignBody = signed.json()?;
    let signatures = &signatures;
    let request = signatures
        .sign_in_sandbox(&requester(&signed.caller), &id, &body.email)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Signed as the signer would",
        SignatureStatus::of(&request, signatures.now()),
    ))
}
