//! QR code operations (spec §4.7, CONTRACT §7): generate (S), status (S), image (no auth).

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_kernel::{QrFormat, Timestamp};
use idconsent_qrcode::QrCodeService;
use idconsent_qrcode::{GenerateQr, QrCodeError, QrRequester, StoredQr};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::config::Config;
use crate::http::auth::{JsonReply, Signed};
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

pub fn routes(config: &mut utoipa_actix_web::service_config::ServiceConfig) {
    config.service(generate).service(image).service(status);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.qr_codes));
}

impl From<QrCodeError> for ApiError {
    fn from(error: QrCodeError) -> Self {
        match error {
            QrCodeError::Invalid(errors) => ApiError::validation(errors),
            QrCodeError::Expired => ApiError::gone(error.to_string()),
            QrCodeError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}

fn requester(signed: &Signed) -> QrRequester {
    QrRequester {
        application_id: signed.caller.application.id.clone(),
        environment: signed.caller.environment,
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerateBody {
    /// What the code encodes: 1 to 2,048 bytes, fitting the error-correction level.
    data: String,
    /// `png` (default) or `svg`.
    format: Option<String>,
    /// Pixels square, 64 to 2,048 (default 256).
    size: Option<i64>,
    /// `L`, `M` (default), `Q` or `H`.
    error_correction: Option<String>,
    /// Seconds until it expires, 60 to 86,400 (default 3,600).
    expires_in: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QrCodeBody {
    id: String,
    /// `active` or `expired`.
    status: &'static str,
    data: String,
    /// `png` or `svg`.
    format: &'static str,
    size: u32,
    error_correction: &'static str,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
    /// Where the image is served without authentication until it expires.
    image_url: String,
    /// In the answer to `POST /v1/qr/generate` only: base64 of the PNG, or the SVG text.
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

fn body(qr_codes: &QrCodeService, config: &Config, code: &StoredQr) -> QrCodeBody {
    QrCodeBody {
        id: code.id.to_string(),
        status: code.status_at(qr_codes.now()).as_str(),
        data: code.data.clone(),
        format: code.format.as_str(),
        size: code.options.size,
        error_correction: code.options.error_correction.as_str(),
        created_at: code.created_at,
        expires_at: code.expires_at,
        image_url: format!("{}/v1/qr/{}/image", config.base_url, code.id),
        image: None,
    }
}

/// Generates a QR code: stored for `expiresIn` seconds, its image served at `imageUrl` without
/// authentication (the id is unguessable) and returned here too.
#[utoipa::path(
    tag = "qr",
    security(("signedRequest" = [])),
    request_body = GenerateBody,
    responses(
        (status = 201, description = "Generated", body = Envelope<QrCodeBody>),
        (status = 422, description = "Data empty, too long or not fitting its error-correction level; bad format, size, level or lifetime", body = ErrorBody)
    )
)]
#[post("/v1/qr/generate")]
pub async fn generate(
    qr_codes: web::Data<QrCodeService>,
    config: web::Data<Config>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    signed
        .idempotent("POST /v1/qr/generate", || async {
            let request: GenerateBody = signed.json()?;
            let generated = qr_codes
                .generate(
                    &requester(&signed),
                    GenerateQr {
                        data: request.data,
                        format: request.format,
                        size: request.size,
                        error_correction: request.error_correction,
                        expires_in: request.expires_in,
                    },
                )
                .await?;
            let encoded = match generated.code.format {
                QrFormat::Png => BASE64.encode(&generated.image),
                QrFormat::Svg => String::from_utf8_lossy(&generated.image).into_owned(),
            };
            JsonReply::envelope(
                StatusCode::CREATED,
                "QR code generated",
                QrCodeBody {
                    image: Some(encoded),
                    ..body(&qr_codes, &config, &generated.code)
                },
            )
        })
        .await
}

/// A QR code and whether it is still `active` (the application that made it only).
#[utoipa::path(
    tag = "qr",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`qr_…`")),
    responses(
        (status = 200, description = "The code", body = Envelope<QrCodeBody>),
        (status = 404, description = "No such code for this application", body = ErrorBody)
    )
)]
#[get("/v1/qr/{id}")]
pub async fn status(
    qr_codes: web::Data<QrCodeService>,
    config: web::Data<Config>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let code = qr_codes.get(&requester(&signed), &id).await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        body(&qr_codes, &config, &code),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct ImageQuery {
    /// `png` or `svg`; else the `Accept` header decides, else the code's own format.
    format: Option<String>,
}

/// The image, without authentication. Cacheable until the code expires (`Cache-Control`
/// `max-age`, a strong `ETag`, `Vary: Accept`); `If-None-Match` gets 304.
#[utoipa::path(
    tag = "qr",
    params(("id" = String, Path, description = "`qr_…`"), ImageQuery),
    responses(
        (status = 200, description = "PNG or SVG", content_type = "image/png", body = Vec<u8>),
        (status = 304, description = "Not modified (If-None-Match)"),
        (status = 404, description = "No such code", body = ErrorBody),
        (status = 410, description = "The code has expired", body = ErrorBody),
        (status = 422, description = "format is not png or svg", body = ErrorBody)
    )
)]
#[get("/v1/qr/{id}/image")]
pub async fn image(
    qr_codes: web::Data<QrCodeService>,
    req: HttpRequest,
    id: web::Path<String>,
    query: web::Query<ImageQuery>,
) -> Result<HttpResponse, ApiError> {
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    let drawn = qr_codes.image(&id, query.format.as_deref(), accept).await?;
    let cache = format!("public, max-age={}", drawn.max_age.as_secs());
    let not_modified = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|tag| tag.trim() == drawn.etag || tag.trim() == "*")
        });
    let mut response = if not_modified {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    response
        .insert_header((header::CACHE_CONTROL, cache))
        .insert_header((header::ETAG, drawn.etag))
        .insert_header((header::VARY, HeaderValue::from_static("Accept")))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    if not_modified {
        return Ok(response.finish());
    }
    Ok(response
        .content_type(drawn.format.content_type())
        .body(drawn.bytes))
}
