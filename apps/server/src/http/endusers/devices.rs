use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, post, web};
use idconsent_enduser::Device;
use idconsent_enduser::EndUserService;
use idconsent_kernel::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use super::AppUser;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// One of the user's devices: one passkey on one installation of the app.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceBody {
    /// `dev_…`
    id: String,
    name: String,
    /// e.g. `ios`, `android`.
    platform: String,
    /// `pending` (added to an enrolled phone: waits for an approval from another device, or for
    /// the end of a recovery), `active`, `blocked` or `deregistered`.
    status: &'static str,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    /// The last verified assertion; `null` before the first.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    last_used_at: Option<Timestamp>,
    /// A pending device under recovery becomes active then, unless rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    recovery_ends_at: Option<Timestamp>,
}

impl From<&Device> for DeviceBody {
    fn from(device: &Device) -> Self {
        Self {
            id: device.id.to_string(),
            name: device.name.clone(),
            platform: device.platform.clone(),
            status: device.status.as_str(),
            created_at: device.created_at,
            last_used_at: device.last_used_at,
            recovery_ends_at: device.recovery_ends_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceList {
    /// Every status, oldest first.
    devices: Vec<DeviceBody>,
}

/// The signed-in user's devices (any status).
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    responses(
        (status = 200, description = "Devices", body = Envelope<DeviceList>),
        (status = 401, description = "No valid access token for this X-Device-ID", body = ErrorBody)
    )
)]
#[get("/v1/devices")]
pub async fn list(
    endusers: web::Data<EndUserService>,
    user: AppUser,
) -> Result<HttpResponse, ApiError> {
    let devices = endusers.devices(&user.0.user).await?;
    Ok(respond(
        StatusCode::OK,
        "Devices",
        DeviceList {
            devices: devices.iter().map(Into::into).collect(),
        },
    ))
}

/// One of the user's devices; another user's is 404.
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    params(("id" = String, Path, description = "`dev_…`")),
    responses(
        (status = 200, description = "The device", body = Envelope<DeviceBody>),
        (status = 404, description = "Not one of yours", body = ErrorBody)
    )
)]
#[get("/v1/devices/{id}")]
pub async fn get(
    endusers: web::Data<EndUserService>,
    user: AppUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let device = endusers.device(&user.0.user, &id).await?;
    Ok(respond(StatusCode::OK, "Device", DeviceBody::from(&device)))
}

/// Deregisters a device: its passkey stops working, its tokens are revoked (event
/// `device.deregistered`).
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    params(("id" = String, Path, description = "`dev_…`")),
    responses(
        (status = 200, description = "Deregistered", body = Envelope<DeviceBody>),
        (status = 404, description = "Not one of yours", body = ErrorBody),
        (status = 409, description = "Already deregistered", body = ErrorBody)
    )
)]
#[delete("/v1/devices/{id}")]
pub async fn delete(
    endusers: web::Data<EndUserService>,
    user: AppUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let device = endusers.deregister_device(&user.0.user, &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Device deregistered",
        DeviceBody::from(&device),
    ))
}

/// Blocks a device (e.g. a lost phone): it can no longer authenticate and its tokens stop
/// working.
#[utoipa::path(
    tag = "devices",
    security(("appToken" = [])),
    params(("id" = String, Path, description = "`dev_…`")),
    responses(
        (status = 200, description = "Blocked", body = Envelope<DeviceBody>),
        (status = 404, description = "Not one of yours", body = ErrorBody),
        (status = 409, description = "Not active", body = ErrorBody)
    )
)]
#[post("/v1/devices/{id}/block")]
pub async fn block(
    endusers: web::Data<EndUserService>,
    user: AppUser,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let device = endusers.block_device(&user.0.user, &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Device blocked",
        DeviceBody::from(&device),
    ))
}
