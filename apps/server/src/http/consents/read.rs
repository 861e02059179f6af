use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, get, web};

use super::requester;
use crate::context::AppContext;
use crate::http::auth::{API_KEY, Signed};
use crate::http::endusers::AppUser;
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};

/// A consent session as its creator sees it: `{sessionId, clientId, recipient, intent, status,
/// transaction, callbackUrl, createdAt, expiresAt, decidedAt}`. A pending session past its
/// expiry reads as `expired`. Another application's (or environment's) session is 404. The
/// recipient's app may read it too, with its access token and `X-Device-ID`.
#[utoipa::path(
    tag = "consents",
    security(("signedRequest" = []), ("appToken" = [])),
    params(("sessionId" = String, Path, description = "`cs_…`")),
    responses(
        (status = 200, description = "The session", body = Object),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "No such session for this application", body = ErrorBody)
    )
)]
#[get("/v1/consents/auth/{sessionId}")]
pub async fn get(
    context: web::Data<AppContext>,
    req: HttpRequest,
    payload: web::Payload,
    session_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let mut payload = payload.into_inner();
    let session = if req.headers().contains_key(API_KEY) {
        let signed =
            Signed::<{ crate::http::extract::JSON_LIMIT }>::from_request(&req, &mut payload)
                .await?;
        context
            .consents
            .get(&requester(&signed.caller), &session_id)
            .await?
    } else {
        let AppUser(claims) = AppUser::from_request(&req, &mut payload).await?;
        let user = context.endusers.user(&claims.user).await?;
        let session = context.consents.load(&session_id).await?;
        if session.recipient != user.phone {
            return Err(ApiError::not_found("Session not found"));
        }
        session
    };
    Ok(respond(
        StatusCode::OK,
        "ok",
        session.to_json(context.consents.now()),
    ))
}
