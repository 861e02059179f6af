use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use actix_web::{HttpResponse, get, web};
use idconsent_kernel::Timestamp;
use idconsent_signature::SignatureService;
use idconsent_signature::{SignatureRequest, StatusBody};
use serde::Serialize;
use utoipa::ToSchema;

use super::requester;
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// A signature request's status (spec §2.6). `signature.completed` carries the same fields.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignatureStatus {
    /// `sr_…`
    signature_request_id: String,
    /// `pending`, `completed`, `declined` or `expired`.
    status: String,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    completed_at: Option<Timestamp>,
    signers: Vec<SignerStatus>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignerStatus {
    email: String,
    name: String,
    /// `awaiting_signature`, `signed` or `declined`.
    status: String,
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    signed_at: Option<Timestamp>,
    #[schema(required = true)]
    ip_address: Option<String>,
    biometric_verified: bool,
}

impl SignatureStatus {
    /// `request` as of `now`, from the domain's status body so the API and the webhook agree.
    pub fn of(request: &SignatureRequest, now: Timestamp) -> Self {
        let body = StatusBody::of(request, now);
        Self {
            signature_request_id: body.signature_request_id.to_string(),
            status: body.status.to_owned(),
            completed_at: body.completed_at,
            signers: body
                .signers
                .into_iter()
                .map(|signer| SignerStatus {
                    email: signer.email.to_owned(),
                    name: signer.name.to_owned(),
                    status: signer.status.to_owned(),
                    signed_at: signer.signed_at,
                    ip_address: signer.ip_address.map(str::to_owned),
                    biometric_verified: signer.biometric_verified,
                })
                .collect(),
        }
    }
}

/// A signature request of the calling application.
#[utoipa::path(
    tag = "signatures",
    security(("signedRequest" = [])),
    params(("signatureRequestId" = String, Path, description = "`sr_…`")),
    responses(
        (status = 200, description = "The request", body = Envelope<SignatureStatus>),
        (status = 404, description = "No such request for this application", body = ErrorBody)
    )
)]
#[get("/v1/signature/documents/{signatureRequestId}")]
pub async fn get(
    signatures: web::Data<SignatureService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let signatures = &signatures;
    let request = signatures.get(&requester(&signed.caller), &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Signature request",
        SignatureStatus::of(&request, signatures.now()),
    ))
}

/// The signed certificate PDF: the original pages, the audit trail page and a PAdES signature
/// over the whole file.
#[utoipa::path(
    tag = "signatures",
    security(("signedRequest" = [])),
    params(("signatureRequestId" = String, Path, description = "`sr_…`")),
    responses(
        (status = 200, description = "The signed PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 404, description = "No such request for this application", body = ErrorBody),
        (status = 409, description = "Not every signer has signed", body = ErrorBody),
        (status = 410, description = "The uploaded document is no longer stored (lost from the file store): no certificate can be made", body = ErrorBody),
        (status = 503, description = "Every document parser is busy; `Retry-After` says when to try again", body = ErrorBody)
    )
)]
#[get("/v1/signature/documents/{signatureRequestId}/certificate")]
pub async fn certificate(
    signatures: web::Data<SignatureService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (request, pdf) = signatures
        .certificate(&requester(&signed.caller), &id)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/pdf"))
        .insert_header((
            CONTENT_DISPOSITION,
            format!("attachment; filename=\"{}-certificate.pdf\"", request.id),
        ))
        .body(pdf))
}
