//! Wire forms of applications and credentials.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use idconsent_kernel::Timestamp;
use idconsent_merchant::ApplicationView;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationBody {
    id: String,
    merchant_id: String,
    client_id: String,
    name: String,
    callback_url: String,
    redirect_uris: Vec<String>,
    /// Any of `LOGIN`, `TRANSACTION`, `SIGNATURE`, `OAUTH`.
    request_types: Vec<&'static str>,
    /// `sandbox`, or `live` once live credentials exist.
    environment: &'static str,
    /// `sandbox` or `live`.
    live_status: &'static str,
    credentials: Credentials,
    /// The webhook signing secret (`whsec_…`): returned only when the application is created.
    #[serde(skip_serializing_if = "Option::is_none")]
    webhook_secret: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[schema(value_type = String, format = DateTime)]
    updated_at: Timestamp,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Credentials {
    sandbox: SandboxCredential,
    live: LiveCredential,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCredential {
    /// `mk_test_…`
    api_key: String,
    /// The signing secret (`sk_…`), shared by both environments: returned only at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    generated_at: Timestamp,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveCredential {
    /// `mk_live_…`, or null before live approval.
    api_key: Option<String>,
    #[schema(value_type = Option<String>, format = DateTime)]
    generated_at: Option<Timestamp>,
}

impl ApplicationBody {
    pub fn new(
        view: &ApplicationView,
        secret: Option<String>,
        webhook_secret: Option<String>,
    ) -> Self {
        let application = &view.application;
        let environment = application.environment().as_str();
        Self {
            id: application.id.to_string(),
            merchant_id: application.merchant_id.to_string(),
            client_id: application.client_id.to_string(),
            name: application.name.clone(),
            callback_url: application.callback_url.to_string(),
            redirect_uris: application
                .redirect_uris
                .iter()
                .map(ToString::to_string)
                .collect(),
            request_types: application
                .request_types
                .iter()
                .map(|i| i.as_str())
                .collect(),
            environment,
            live_status: environment,
            credentials: Credentials {
                sandbox: SandboxCredential {
                    api_key: view.sandbox_api_key.as_str().to_owned(),
                    secret,
                    generated_at: application.sandbox_key.generated_at,
                },
                live: LiveCredential {
                    api_key: view
                        .live_api_key
                        .as_ref()
                        .map(|key| key.as_str().to_owned()),
                    generated_at: application.live_key.as_ref().map(|key| key.generated_at),
                },
            },
            webhook_secret,
            created_at: application.created_at,
            updated_at: application.updated_at,
        }
    }
}

/// Application responses carry `application` in place of `data` (spec §2).
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationEnvelope {
    code: u16,
    error: bool,
    message: String,
    application: ApplicationBody,
}

pub fn respond_application(
    status: StatusCode,
    message: &str,
    application: ApplicationBody,
) -> HttpResponse {
    HttpResponse::build(status).json(ApplicationEnvelope {
        code: status.as_u16(),
        error: false,
        message: message.to_owned(),
        application,
    })
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialBody {
    /// `sandbox` or `live`.
    pub environment: &'static str,
    pub api_key: String,
    #[schema(value_type = String, format = DateTime)]
    pub generated_at: Timestamp,
}

/// Key rotation responses carry `credential` in place of `data` (spec §2.3).
#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialEnvelope {
    pub code: u16,
    pub error: bool,
    pub message: String,
    pub credential: CredentialBody,
}
