//! What handlers and workers share: the deployment's services (built in [`crate::wiring`]).
//! No stores and no ports: a handler calls one service method.

use std::sync::Arc;

use idconsent_access::RequestGate;
use idconsent_consent::{ConsentApprovals, ConsentService};
use idconsent_enduser::EndUserService;
use idconsent_kernel::{IdGenerator, QrRenderer};
use idconsent_mandate::MandateService;
use idconsent_merchant::MerchantService;
use idconsent_notification::{Notifier, SendLimits};
use idconsent_oauth::OAuthService;
use idconsent_signature::SignatureService;
use idconsent_webhook::DeliveryLog;
use tokio::sync::Notify;

use crate::config::Config;
use crate::http::metrics::Metrics;
use crate::http::openapi::ApiDocs;
use crate::wiring::{OAuthKeys, SystemStatus};

pub use crate::wiring::WiringError;

/// Everything a handler or worker may use. Cloned cheaply (all `Arc`s).
#[derive(Debug)]
pub struct AppContext {
    pub config: Arc<Config>,
    /// Signed requests: authentication, the gate chain, idempotency.
    pub requests: Arc<RequestGate>,
    pub merchants: Arc<MerchantService>,
    pub consents: Arc<ConsentService>,
    /// Consent decisions made without the app: the sandbox helpers.
    pub consent_approvals: Arc<ConsentApprovals>,
    pub qr: Arc<dyn QrRenderer>,
    /// QR codes merchants generate (`/v1/qr`).
    pub qr_codes: Arc<idconsent_qrcode::QrCodeService>,
    pub signatures: Arc<SignatureService>,
    pub mandates: Arc<MandateService>,
    /// Identity verification and liveness (`/v1/identity`).
    pub identity: Arc<idconsent_verification::VerificationService>,
    /// Hosted approval pages for email recipients (`/mandates/{id}`).
    pub hosted: Arc<idconsent_hosted::HostedApprovals>,
    pub billing: Arc<idconsent_billing::BillingService>,
    /// The plan-limit gate, for the worker that reports the calls it counted.
    pub rate_limits: Arc<idconsent_billing::RateLimitGate>,
    pub oauth: Arc<OAuthService>,
    /// The OAuth signing keys shared by every process (operator rotation, reloads).
    pub oauth_keys: Arc<OAuthKeys>,
    /// OpenID Connect client configurations (`/v1/merchants/applications/:id/oidc`).
    pub oidc_clients: Arc<idconsent_oidc::OidcClients>,
    /// The OpenID Provider: discovery and the `/oauth2/*` endpoints.
    pub oidc: Arc<idconsent_oidc::OidcProvider>,
    pub endusers: Arc<EndUserService>,
    /// The merchant's webhook delivery log.
    pub webhooks: Arc<DeliveryLog>,
    /// Queues SMS and email; in dev mode also reads the dev mailbox.
    pub notifier: Arc<Notifier>,
    /// Limits on the calls that make us send codes (CONTRACT §9).
    pub send_limits: Arc<SendLimits>,
    pub system: Arc<SystemStatus>,
    /// The services only background workers drive.
    pub workers: Workers,
    /// Mints request ids.
    pub request_ids: Arc<dyn IdGenerator>,
    pub metrics: Arc<Metrics>,
    /// Whether the database answers (workers and `/readyz` report to it).
    pub health: Arc<crate::health::DatabaseHealth>,
    pub docs: Arc<ApiDocs>,
    pub wake: Wake,
}

impl AppContext {
    pub async fn build(
        config: Config,
        db: idconsent_store_diesel::Db,
    ) -> Result<Self, WiringError> {
        crate::wiring::build(config, db).await
    }
}

/// Services that run in the background.
#[derive(Debug, Clone)]
pub struct Workers {
    pub notifications: Arc<idconsent_notification::Dispatcher>,
    pub webhooks: Arc<idconsent_webhook::Dispatcher>,
}

/// Wakes background workers when there is new work, so nothing waits for the next poll.
#[derive(Debug, Clone, Default)]
pub struct Wake {
    pub notifications: Arc<Notify>,
    pub webhooks: Arc<Notify>,
    /// A verification was submitted: its analysis can start.
    pub identity: Arc<Notify>,
}
