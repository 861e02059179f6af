//! The success envelope: `{ "code", "error": false, "message", "data" }`, and the small bodies
//! several routes share (`pagination`, an empty `data`).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use idconsent_kernel::page::Pagination;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
pub struct Envelope<T> {
    /// The HTTP status.
    pub code: u16,
    /// Always `false`.
    pub error: bool,
    pub message: String,
    pub data: T,
}

/// A JSON response with the success envelope.
pub fn respond<T: Serialize>(
    status: StatusCode,
    message: impl Into<String>,
    data: T,
) -> HttpResponse {
    HttpResponse::build(status).json(Envelope {
        code: status.as_u16(),
        error: false,
        message: message.into(),
        data,
    })
}

/// The `pagination` object of list responses (CONTRACT §1).
#[derive(Debug, Serialize, ToSchema)]
pub struct PaginationBody {
    /// The page shown, from 1.
    page: u32,
    /// Items per page, 1–100.
    limit: u32,
    /// Items in the whole list.
    total: u64,
}

impl From<Pagination> for PaginationBody {
    fn from(pagination: Pagination) -> Self {
        Self {
            page: pagination.page,
            limit: pagination.limit,
            total: pagination.total,
        }
    }
}

/// `data` of an operation with nothing to return: always `{}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}
