//! What the wiring hands the app: the services handlers call, what the background workers
//! drive, and the wake-ups between them. Services only — no stores, no ports.

use std::sync::Arc;

use idconsent_access::RequestGate;
use idconsent_billing::{BillingService, RateLimitGate};
use idconsent_consent::{ConsentApprovals, ConsentService};
use idconsent_enduser::EndUserService;
use idconsent_hosted::HostedApprovals;
use idconsent_kernel::id::Entropy;
use idconsent_kernel::{IdGenerator, RandomSource};
use idconsent_mandate::MandateService;
use idconsent_merchant::MerchantService;
use idconsent_notification::{Notifier, SendLimits};
use idconsent_oauth::OAuthService;
use idconsent_qrcode::QrCodeService;
use idconsent_signature::SignatureService;
use idconsent_verification::VerificationService;
use idconsent_webhook::DeliveryLog;
use tokio::sync::Notify;

use super::oauth::OAuthKeys;
use super::system::SystemStatus;
use crate::config::Config;

/// The built deployment.
#[derive(Debug)]
pub struct Deployment {
    pub config: Arc<Config>,
    /// What the HTTP areas call; each area registers the ones its handlers take.
    pub services: Services,
    /// What the background workers drive.
    pub background: Background,
    /// Mints the ids of requests that came without one (the request middleware).
    pub request_ids: RequestIds,
}

/// The services the HTTP layer calls. Cloned cheaply (all `Arc`s).
#[derive(Debug, Clone)]
pub struct Services {
    /// Signed requests: authentication, the gate chain, idempotency.
    pub requests: Arc<RequestGate>,
    pub merchants: Arc<MerchantService>,
    pub consents: Arc<ConsentService>,
    /// Consent decisions made without the app: the sandbox helpers.
    pub consent_approvals: Arc<ConsentApprovals>,
    /// QR codes merchants generate (`/v1/qr`).
    pub qr_codes: Arc<QrCodeService>,
    pub signatures: Arc<SignatureService>,
    pub mandates: Arc<MandateService>,
    /// Identity verification and liveness (`/v1/identity`).
    pub identity: Arc<VerificationService>,
    /// Hosted approval pages for email recipients (`/mandates/{id}`).
    pub hosted: Arc<HostedApprovals>,
    pub billing: Arc<BillingService>,
    pub oauth: Arc<OAuthService>,
    /// The OAuth signing keys shared by every process (operator rotation, reloads).
    pub oauth_keys: Arc<OAuthKeys>,
    /// OpenID Connect client configurations (`/v1/merchants/applications/:id/oidc`).
    pub oidc_clients: Arc<idconsent_oidc::OidcClients>,
    /// The OpenID Connect provider (`/oauth2/*`, discovery).
    pub oidc: Arc<idconsent_oidc::OidcProvider>,
    pub endusers: Arc<EndUserService>,
    /// The merchant's webhook delivery log.
    pub webhooks: Arc<DeliveryLog>,
    /// Queues SMS and email; in dev mode also reads the dev mailbox.
    pub notifier: Arc<Notifier>,
    /// Limits on the calls that make us send codes (CONTRACT §9).
    pub send_limits: Arc<SendLimits>,
    pub system: Arc<SystemStatus>,
    /// Nonces of the HTML pages' Content-Security-Policy.
    pub page_nonces: PageNonces,
}

/// What the background workers drive, and what wakes them.
#[derive(Debug, Clone)]
pub struct Background {
    pub requests: Arc<RequestGate>,
    pub send_limits: Arc<SendLimits>,
    pub endusers: Arc<EndUserService>,
    pub hosted: Arc<HostedApprovals>,
    pub consents: Arc<ConsentService>,
    pub oauth_keys: Arc<OAuthKeys>,
    pub signatures: Arc<SignatureService>,
    pub mandates: Arc<MandateService>,
    pub identity: Arc<VerificationService>,
    pub billing: Arc<BillingService>,
    /// The plan-limit gate, for the worker that reports the calls it counted.
    pub rate_limits: Arc<RateLimitGate>,
    pub notifications: Arc<idconsent_notification::Dispatcher>,
    pub webhooks: Arc<idconsent_webhook::Dispatcher>,
    pub wake: Wake,
}

/// Wakes background workers when there is new work, so nothing waits for the next poll.
#[derive(Debug, Clone, Default)]
pub struct Wake {
    pub notifications: Arc<Notify>,
    pub webhooks: Arc<Notify>,
    /// A verification was submitted: its analysis can start.
    pub identity: Arc<Notify>,
}

/// Draws a fresh nonce per HTML page for its Content-Security-Policy, from the deployment's
/// random source (handlers draw no randomness themselves).
#[derive(Debug, Clone)]
pub struct PageNonces(Arc<dyn RandomSource>);

impl PageNonces {
    pub fn new(random: Arc<dyn RandomSource>) -> Self {
        Self(random)
    }

    /// 128 bits, hex.
    pub fn next(&self) -> String {
        self.0.hex(16)
    }
}

/// Mints `req_…` ids from the deployment's id generator.
#[derive(Debug, Clone)]
pub struct RequestIds(Arc<dyn IdGenerator>);

impl RequestIds {
    pub fn new(ids: Arc<dyn IdGenerator>) -> Self {
        Self(ids)
    }

    pub fn mint(&self) -> String {
        format!("req_{}", self.0.body(Entropy::Sortable))
    }
}
