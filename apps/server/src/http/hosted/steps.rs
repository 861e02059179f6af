//! The hosted page's JSON steps, each from the purpose to the HTTP answer, and their response
//! bodies. The handlers (`approve.rs`) only say which purpose a request names.

use actix_web::http::StatusCode;
use actix_web::http::header::USER_AGENT;
use actix_web::{HttpRequest, HttpResponse};
use idconsent_approval::{Decision, Purpose};
use idconsent_hosted::{Answer, Client};
use idconsent_kernel::ValidationErrors;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::HostedState;
use crate::http::envelope::{Empty, respond};
use crate::http::error::ApiError;

#[derive(Debug, Serialize, ToSchema)]
pub struct HostedPageToken {
    /// Proves the address for 15 minutes and one decision; send it with the next steps.
    token: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedCreationOptions {
    /// For `navigator.credentials.create` (WebAuthn JSON, user verification required).
    #[schema(value_type = Object)]
    public_key: Value,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostedAssertionOptions {
    /// For `navigator.credentials.get`: the challenge commits to `context`.
    #[schema(value_type = Object)]
    public_key: Value,
    /// What is being decided, exactly as committed to.
    #[schema(value_type = Object)]
    context: Value,
    context_hash: String,
    nonce: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HostedDecision {
    /// The object's status now (a mandate `active` or `cancelled`; a signature request
    /// `pending`, `completed` or `declined`).
    status: String,
}

/// Emails the code (counted against the caller's sending allowance first, CONTRACT §9).
pub async fn send_code(
    state: &HostedState,
    req: &HttpRequest,
    purpose: &Purpose,
) -> Result<HttpResponse, ApiError> {
    state.admit_code(req).await?;
    state.hosted.send_code(purpose).await?;
    Ok(respond(StatusCode::ACCEPTED, "Code sent", Empty {}))
}

pub async fn verify_code(
    state: &HostedState,
    purpose: &Purpose,
    code: &str,
) -> Result<HttpResponse, ApiError> {
    let token = state.hosted.verify_code(purpose, code).await?;
    Ok(respond(
        StatusCode::OK,
        "Address confirmed",
        HostedPageToken { token },
    ))
}

pub async fn passkey_registration(
    state: &HostedState,
    purpose: &Purpose,
    token: &str,
) -> Result<HttpResponse, ApiError> {
    let options = state.hosted.passkey_registration(purpose, token).await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        HostedCreationOptions {
            public_key: options["publicKey"].clone(),
        },
    ))
}

/// The assertion step, for the page that showed `shown` (its `data-context-hash`).
pub async fn passkey_assertion(
    state: &HostedState,
    purpose: &Purpose,
    token: &str,
    credential: &Value,
    shown: &str,
) -> Result<HttpResponse, ApiError> {
    let started = state
        .hosted
        .passkey_assertion(purpose, token, credential, shown)
        .await?;
    Ok(respond(
        StatusCode::OK,
        "ok",
        HostedAssertionOptions {
            public_key: started.options["publicKey"].clone(),
            context: started.context,
            context_hash: started.context_hash,
            nonce: started.nonce,
        },
    ))
}

/// What a page's decision step sends.
#[derive(Debug, Clone, Copy)]
pub struct DecisionStep<'a> {
    pub token: &'a str,
    pub decision: &'a str,
    /// The hash of what the page showed (its `data-context-hash`).
    pub shown: &'a str,
    pub assertion: Option<&'a Value>,
}

/// The decision: `approve` or `reject` (else 422), with who is at the page for the audit trail.
pub async fn decide(
    state: &HostedState,
    req: &HttpRequest,
    purpose: &Purpose,
    step: DecisionStep<'_>,
) -> Result<HttpResponse, ApiError> {
    let DecisionStep {
        token,
        decision,
        shown,
        assertion,
    } = step;
    let decision = match decision {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject,
        _ => {
            return Err(ApiError::validation(ValidationErrors::single(
                "decision",
                "must be approve or reject",
            )));
        }
    };
    let client = Client {
        ip_address: req.peer_addr().map(|peer| peer.ip().to_string()),
        user_agent: req
            .headers()
            .get(USER_AGENT)
            .and_then(|value| value.to_str().ok())
            .map(|agent| agent.chars().take(300).collect()),
    };
    let answer = Answer {
        decision,
        shown,
        assertion: assertion.filter(|value| !value.is_null()),
        client,
    };
    let status = state
        .hosted
        .decide(purpose, token, answer, &|_| {
            idconsent_approval::Effects::default()
        })
        .await?;
    Ok(respond(
        StatusCode::OK,
        "Decided",
        HostedDecision { status },
    ))
}
