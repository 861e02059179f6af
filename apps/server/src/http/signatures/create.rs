use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_kernel::Timestamp;
use idconsent_signature::SignatureService;
use idconsent_signature::{CreateRequest, SignerInput};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::requester;
use crate::http::auth::{JsonReply, Signed};
use crate::http::envelope::Envelope;
use crate::http::error::{ApiError, ErrorBody};

/// The body limit of this endpoint: a 20 MiB document is about 26.7 MiB of base64, plus the
/// rest of the JSON. Between this and the decoded limit the service answers 413 itself.
pub const DOCUMENT_BODY_LIMIT: usize = 28 << 20;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateSignatureBody {
    /// Base64 (standard, padded) of a PDF: at most 20 MiB decoded, not encrypted.
    document: String,
    /// 1 to 20 signers with distinct emails.
    signers: Vec<SignerBody>,
    /// Where `signature.completed` goes; default: the application's callback URL.
    callback_url: Option<String>,
    /// Hours from 1 to 720; default 72.
    #[schema(value_type = Option<u32>)]
    expires_in: Option<serde_json::Number>,
    /// Whether each signer must confirm with a passkey; default true.
    require_biometric: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SignerBody {
    email: String,
    name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedSignatureRequest {
    /// `sr_…`
    signature_request_id: String,
    /// `pending`.
    status: &'static str,
    signers: Vec<CreatedSigner>,
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedSigner {
    email: String,
    name: String,
    /// `awaiting_signature`.
    status: &'static str,
    /// The hosted signing page: `{IDC_SIGN_URL}/{signatureRequestId}`.
    sign_url: String,
}

/// Uploads a PDF and asks its signers to sign it. Honours `Idempotency-Key`.
#[utoipa::path(
    tag = "signatures",
    security(("signedRequest" = [])),
    request_body = CreateSignatureBody,
    responses(
        (status = 201, description = "Created; every signer can sign at signUrl", body = Envelope<CreatedSignatureRequest>),
        (status = 400, description = "Malformed body", body = ErrorBody),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 409, description = "Idempotency-Key reused with another body", body = ErrorBody),
        (status = 413, description = "The document is over 20 MiB", body = ErrorBody),
        (status = 422, description = "Not a PDF, encrypted, not readable within the parser's limits, or invalid signers or values", body = ErrorBody),
        (status = 503, description = "Every document parser is busy; `Retry-After` says when to try again", body = ErrorBody)
    )
)]
#[post("/v1/signature/documents")]
pub async fn create(
    signatures: web::Data<SignatureService>,
    signed: Signed<DOCUMENT_BODY_LIMIT>,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent("POST /v1/signature/documents", || async {
            let body: CreateSignatureBody = signed.json()?;
            let signatures = &signatures;
            let request = signatures
                .create(
                    &requester(&signed.caller),
                    CreateRequest {
                        document: body.document,
                        signers: body
                            .signers
                            .into_iter()
                            .map(|signer| SignerInput {
                                email: signer.email,
                                name: signer.name,
                            })
                            .collect(),
                        callback_url: body.callback_url,
                        expires_in: body.expires_in.map(|hours| hours.to_string()),
                        require_biometric: body.require_biometric,
                    },
                )
                .await?;
            let sign_url = signatures.sign_url(&request);
            JsonReply::envelope(
                StatusCode::CREATED,
                "Signature request created",
                CreatedSignatureRequest {
                    signature_request_id: request.id.to_string(),
                    status: request.status.as_str(),
                    signers: request
                        .signers
                        .iter()
                        .map(|signer| CreatedSigner {
                            email: signer.email.to_string(),
                            name: signer.name.clone(),
                            status: signer.status.as_str(),
                            sign_url: sign_url.clone(),
                        })
                        .collect(),
                    expires_at: request.expires_at,
                },
            )
        })
        .await
}
