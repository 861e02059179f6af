use actix_web::http::StatusCode;
use actix_web::{HttpResponse, delete, get, post, web};
use idconsent_merchant::MerchantService;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::{SessionBody, UserBody};
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
pub struct InviteBody {
    email: String,
    name: String,
    /// `admin`, `developer` or `viewer`.
    role: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AcceptBody {
    /// The `token` of the invitation link.
    token: String,
    /// At least 10 characters.
    password: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Member {
    user: UserBody,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Members {
    users: Vec<UserBody>,
}

/// Invites a team member by email (owner, admin). The link is valid for 7 days.
#[utoipa::path(
    tag = "team",
    security(("merchantJwt" = [])),
    request_body = InviteBody,
    responses(
        (status = 201, description = "Invited", body = Envelope<Member>),
        (status = 403, description = "Not an owner or admin", body = ErrorBody),
        (status = 409, description = "Already a member", body = ErrorBody),
        (status = 422, description = "Invalid values (owners cannot be invited)", body = ErrorBody)
    )
)]
#[post("/v1/merchants/users")]
pub async fn invite(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    ApiJson(body): ApiJson<InviteBody>,
) -> Result<HttpResponse, ApiError> {
    let member = merchants
        .invite_member(&actor, &body.email, &body.name, &body.role)
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        "Invitation sent",
        Member {
            user: (&member).into(),
        },
    ))
}

/// Accepts an invitation (no session needed) and signs the new member in.
#[utoipa::path(
    tag = "team",
    request_body = AcceptBody,
    responses(
        (status = 200, description = "Member active", body = Envelope<SessionBody>),
        (status = 400, description = "Invalid or expired link", body = ErrorBody),
        (status = 422, description = "Password too short", body = ErrorBody)
    )
)]
#[post("/v1/merchants/users/accept")]
pub async fn accept(
    merchants: web::Data<MerchantService>,
    ApiJson(body): ApiJson<AcceptBody>,
) -> Result<HttpResponse, ApiError> {
    let session = merchants
        .accept_invitation(&body.token, &body.password)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Invitation accepted",
        SessionBody::from(session),
    ))
}

/// The team: invited and active members.
#[utoipa::path(
    tag = "team",
    security(("merchantJwt" = [])),
    responses((status = 200, description = "Members", body = Envelope<Members>))
)]
#[get("/v1/merchants/users")]
pub async fn list(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
) -> Result<HttpResponse, ApiError> {
    let users = merchants.team(&actor).await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        Members {
            users: users.iter().map(Into::into).collect(),
        },
    ))
}

/// Removes a member (owner, admin). Admins cannot remove owners (403); the last owner stays
/// (409). The member's tokens stop working at once.
#[utoipa::path(
    tag = "team",
    security(("merchantJwt" = [])),
    params(("id" = String, Path, description = "Member id (`usr_…`)")),
    responses(
        (status = 200, description = "Removed", body = Envelope<Member>),
        (status = 403, description = "Not allowed", body = ErrorBody),
        (status = 404, description = "No such member", body = ErrorBody),
        (status = 409, description = "The last owner", body = ErrorBody)
    )
)]
#[delete("/v1/merchants/users/{id}")]
pub async fn remove(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let member = merchants.remove_member(&actor, &id).await?;
    Ok(respond(
        StatusCode::OK,
        "Member removed",
        Member {
            user: (&member).into(),
        },
    ))
}
