use actix_web::http::header;
use actix_web::{HttpResponse, get, web};
use idconsent_consent::ConsentService;
use idconsent_kernel::{QrFormat, QrOptions, ValidationErrors};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::http::error::{ApiError, ErrorBody};

#[derive(Debug, Deserialize, IntoParams)]
pub struct QrQuery {
    /// Pixels (PNG) or user units (SVG), 64 to 2048; default 256.
    size: Option<u32>,
}

/// The session's QR code as PNG or SVG. No authentication: the image only encodes the session
/// id. 410 once the session is no longer pending.
#[utoipa::path(
    tag = "consents",
    params(
        ("type" = String, Path, description = "`png` or `svg`"),
        ("sessionId" = String, Path, description = "`cs_…`"),
        QrQuery
    ),
    responses(
        (status = 200, description = "The image", content_type = "image/png"),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 410, description = "The session is no longer pending", body = ErrorBody),
        (status = 422, description = "Unknown type or size out of range", body = ErrorBody)
    )
)]
#[get("/v1/consents/qr/{type}/{sessionId}")]
pub async fn image(
    consents: web::Data<ConsentService>,
    path: web::Path<(String, String)>,
    query: web::Query<QrQuery>,
) -> Result<HttpResponse, ApiError> {
    let (kind, session_id) = path.into_inner();
    let mut errors = ValidationErrors::new();
    let format = QrFormat::parse(&kind);
    if format.is_none() {
        errors.push("type", "must be png or svg");
    }
    let size = query.size.unwrap_or(QrOptions::default().size);
    if !(QrOptions::MIN_SIZE..=QrOptions::MAX_SIZE).contains(&size) {
        errors.push("size", "must be between 64 and 2048");
    }
    let format = errors.finish_with(|| format)?;
    let options = QrOptions {
        size,
        ..QrOptions::default()
    };
    let image = consents.pending_qr(&session_id, format, &options).await?;
    Ok(HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(image))
}
