use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, get, web};
use idconsent_consent::ConsentService;
use idconsent_consent::Session;
use idconsent_enduser::EndUserService;
use idconsent_kernel::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use super::requester;
use crate::http::auth::{API_KEY, Signed};
use crate::http::endusers::AppUser;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

/// A consent session as its application (or its recipient's app) reads it. The `consent.*`
/// webhooks carry the same fields (CONTRACT §8).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsentSession {
    /// `cs_…`
    session_id: String,
    /// The creating application's client ID.
    client_id: String,
    /// The user's phone (E.164).
    recipient: String,
    /// `LOGIN`, `TRANSACTION`, `SIGNATURE` or `OAUTH`.
    intent: &'static str,
    /// `pending`, `approved`, `rejected` or `expired` (a pending session past its expiry reads
    /// as expired at once).
    status: &'static str,
    transaction: ConsentTransaction,
    callback_url: String,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    expires_at: Timestamp,
    /// `null` while pending; the expiry for an expired session.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    decided_at: Option<Timestamp>,
}

/// What the user is shown and approves.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsentTransaction {
    #[serde(rename = "type")]
    kind: String,
    description: String,
    /// Major units, e.g. `19.99`.
    amount: f64,
    /// ISO 4217.
    currency: String,
    payee: String,
}

impl ConsentSession {
    /// `session` as of `now`.
    pub fn of(session: &Session, now: Timestamp) -> Self {
        let transaction = &session.transaction;
        Self {
            session_id: session.id.to_string(),
            client_id: session.client_id.to_string(),
            recipient: session.recipient.to_string(),
            intent: session.intent.as_str(),
            status: session.status_at(now).as_str(),
            transaction: ConsentTransaction {
                kind: transaction.kind.clone(),
                description: transaction.description.clone(),
                amount: transaction.amount.major_f64(),
                currency: transaction.amount.currency().code().to_owned(),
                payee: transaction.payee.clone(),
            },
            callback_url: session.callback_url.clone(),
            created_at: session.created_at,
            expires_at: session.expires_at,
            decided_at: session.decided_at_as_of(now),
        }
    }
}

/// A consent session as its creator sees it. A pending session past its expiry reads as
/// `expired`. Another application's (or environment's) session is 404. The
/// recipient's app may read it too, with its access token and `X-Device-ID`.
#[utoipa::path(
    tag = "consents",
    security(("signedRequest" = []), ("appToken" = [])),
    params(("sessionId" = String, Path, description = "`cs_…`")),
    responses(
        (status = 200, description = "The session", body = Envelope<ConsentSession>),
        (status = 401, description = "Signature check failed", body = ErrorBody),
        (status = 404, description = "No such session for this application", body = ErrorBody)
    )
)]
#[get("/v1/consents/auth/{sessionId}")]
pub async fn get(
    consents: web::Data<ConsentService>,
    endusers: web::Data<EndUserService>,
    req: HttpRequest,
    payload: web::Payload,
    session_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let mut payload = payload.into_inner();
    let session = if req.headers().contains_key(API_KEY) {
        let signed =
            Signed::<{ crate::http::extract::JSON_LIMIT }>::from_request(&req, &mut payload)
                .await?;
        consents
            .get(&requester(&signed.caller), &session_id)
            .await?
    } else {
        let AppUser(claims) = AppUser::from_request(&req, &mut payload).await?;
        let user = endusers.user(&claims.user).await?;
        consents.get_for_recipient(&user.phone, &session_id).await?
    };
    Ok(respond(
        StatusCode::OK,
        "ok",
        ConsentSession::of(&session, consents.now()),
    ))
}
