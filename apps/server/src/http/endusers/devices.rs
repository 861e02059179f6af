use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, post, web};
use serde_json::{Value, json};

use super::AppUser;
use crate::context::AppContext;
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};

/// The signed-in user's devices (any status).
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    responses(
        (status = 200, description = "Devices", body = Object),
        (status = 401, description = "No valid access token for this X-Device-ID", body = ErrorBody)
    )
)]
#[get("/v1/devices")]
pub async fn list(context: web::Data<AppContext>, user: AppUser) -> Result<HttpResponse, ApiError> {
    let devices: Vec<Value> = context
        .endusers
        .devices(&user.0.user)
        .await?
        .iter()
        .map(|device| device.to_json())
        .collect();
    Ok(respond(
        StatusCode::OK,
        "Devices",
        json!({"devices": devices}),
    ))
}

/// One of the user's devices; another user's is 404.
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    params(("id" = String, Path, description = "`dev_…`")),
    responses(
        (status = 200, description = "The device", body = Object),
        (status = 404, description = "Not one of yours", body = ErrorBody)
    )
)]
#[get("/v1/devices/{id}")]
pub async fn get(
    context: web::Data<AppContext>,
    user: AppUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let device = context.endusers.device(&user.0.user, &id).await?;
    Ok(respond(StatusCode::OK, "Device", device.to_json()))
}

/// Deregisters a device: its passkey stops working, its tokens are revoked (event
/// `device.deregistered`).
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    params(("id" = String, Path, description = "`dev_…`")),
    responses(
        (status = 200, description = "Deregistered", body = Object),
        (status = 404, description = "Not one of yours", body = ErrorBody),
        (status = 409, description = "Already deregistered", body = ErrorBody)
    )
)]
#[delete("/v1/devices/{id}")]
pub async fn delete(
    context: web::Data<AppContext>,
    user: AppUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let device = context
        .endusers
        .deregister_device(&user.0.user, &id)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Device deregistered",
        device.to_json(),
    ))
}

/// Blocks a device (e.g. a lost phone): it can no longer authenticate and its tokens stop
/// working.
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    params(("id" = String, Path, description = "`dev_…`")),
    responses(
        (status = 200, description = "Blocked", body = Object),
        (status = 404, description = "Not one of yours", body = ErrorBody),
        (status = 409, description = "Not active", body = ErrorBody)
    )
)]
#[post("/v1/devices/{id}/block")]
pub async fn block(
    context: web::Data<AppContext>,
    user: AppUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let device = context.endusers.block_device(&user.0.user, &id).await?;
    Ok(respond(StatusCode::OK, "Device blocked", device.to_json()))
}
