use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::ValidationErrors;
use idconsent_merchant::MerchantService;
use idconsent_merchant::{DocumentUpload, MAX_DOCUMENT_BYTES};
use serde::Deserialize;
use utoipa::ToSchema;

use super::views::DocumentBody;
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::{ApiJson, FILE_LIMIT};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadBody {
    /// `business_registration`, `representative_id`, `tax_document` or `address_proof`.
    #[serde(rename = "type")]
    document_type: String,
    file_name: String,
    /// `application/pdf`, `image/png` or `image/jpeg`; must match the content.
    mime_type: String,
    /// Bytes of the decoded content; at most 10 MiB.
    size: u64,
    /// The file, standard base64.
    content_base64: String,
}

/// Uploads a document for the go-live review (owner, admin).
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    request_body = UploadBody,
    responses(
        (status = 201, description = "Stored", body = Envelope<DocumentBody>),
        (status = 403, description = "Not an owner or admin", body = ErrorBody),
        (status = 413, description = "Body over 15 MiB", body = ErrorBody),
        (status = 422, description = "Wrong type, format, size or content", body = ErrorBody)
    )
)]
#[post("/v1/merchants/documents")]
pub async fn upload_document(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    ApiJson(body): ApiJson<UploadBody, FILE_LIMIT>,
) -> Result<HttpResponse, ApiError> {
    // Refuse an oversized declaration before decoding anything.
    if body.size > MAX_DOCUMENT_BYTES {
        return Err(ValidationErrors::single(
            "size",
            format!("must be at most {MAX_DOCUMENT_BYTES} bytes"),
        )
        .into());
    }
    let content = BASE64
        .decode(body.content_base64.trim())
        .map_err(|_| ValidationErrors::single("contentBase64", "must be standard base64"))?;
    let document = merchants
        .upload_document(
            &actor,
            DocumentUpload {
                document_type: body.document_type,
                file_name: body.file_name,
                mime_type: body.mime_type,
                declared_size: body.size,
                content,
            },
        )
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        "Document uploaded",
        DocumentBody::from(&document),
    ))
}
