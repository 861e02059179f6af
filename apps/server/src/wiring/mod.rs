//! The composition root: each domain's adapters and services are built once, in the domain's
//! own file, from what every domain shares ([`Shared`]). The approval registry and the gate
//! chain are assembled here: a new approvable domain is one `register` line, a new gate one
//! `then` line.

mod billing;
mod blobs;
mod bridges;
mod consent;
mod deployment;
mod enduser;
mod identity;
mod mandate;
mod merchant;
mod notification;
mod oauth;
mod oidc;
mod signature;
mod system;
mod webhook;

use std::sync::Arc;

use idconsent_access::GateChain;
use idconsent_approval::ApprovalRegistry;
use idconsent_consent::ConsentApprovals;
use idconsent_kernel::BlobStore;
use idconsent_kernel::{
    Clock, IdGenerator, KeyedHash, Metering, Nudge, OsRandom, RandomSource, SecretVault,
    SystemClock, UlidGenerator,
};
use idconsent_mandate::MandateApprovals;
use idconsent_notification::{Invitations, Notifier, SandboxRecipients};
use idconsent_oauth::OAuthApprovals;
use idconsent_signature::SignatureApprovals;
use idconsent_store_diesel::{Db, reseal_legacy_secrets};
use idconsent_vault_ring::{AesGcmVault, HmacKeyedHash, MasterKey};
use tokio::sync::Notify;

pub use deployment::{Background, Deployment, PageNonces, RequestIds, Services, Wake};
pub use oauth::OAuthKeys;
pub use system::SystemStatus;

use crate::config::{Config, Mode};

/// What every domain's wiring may use.
#[derive(Debug, Clone)]
pub struct Shared {
    pub config: Arc<Config>,
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub random: Arc<dyn RandomSource>,
    /// Derives the keys of token signers and the like.
    pub master: Arc<MasterKey>,
    pub vault: Arc<dyn SecretVault>,
    pub hasher: Arc<dyn KeyedHash>,
    /// Queues SMS and email; the notifications worker delivers them.
    pub notifier: Arc<Notifier>,
    /// Uploaded and generated files: the database, the data directory or an S3-compatible
    /// store (ADR 0037).
    pub blobs: Arc<dyn BlobStore>,
    /// What metered actions cost: counted against the merchant's plan quota (billing).
    pub metering: Arc<dyn Metering>,
    pub wake: Wake,
}

impl Shared {
    /// Wakes the webhook worker after an outbox write.
    pub fn outbox_written(&self) -> Arc<dyn Nudge> {
        Arc::new(NotifyNudge(self.wake.webhooks.clone()))
    }
}

#[derive(Debug)]
pub(crate) struct NotifyNudge(pub(crate) Arc<Notify>);

impl Nudge for NotifyNudge {
    fn nudge(&self) {
        self.0.notify_one();
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    #[error(transparent)]
    Smtp(#[from] idconsent_notify::SmtpConfigError),
    #[error(transparent)]
    Sms(#[from] idconsent_notify::HttpSmsConfigError),
    #[error("registry: {0}")]
    Registry(#[from] idconsent_registry::InvalidRegistryConfig),
    #[error("session tokens: {0}")]
    Tokens(#[from] idconsent_merchant::ports::TokenError),
    #[error("password hashing: {0}")]
    Passwords(#[from] idconsent_merchant::ports::PasswordError),
    #[error(transparent)]
    Webhooks(#[from] idconsent_webhook_http::BuildError),
    #[error("OAuth signing keys to import (IDC_OAUTH_KEYS_DIR): {0}")]
    OAuthKeyImport(#[from] idconsent_jose::KeyRingError),
    #[error("OAuth signing keys: {0}")]
    OAuthKeys(#[from] idconsent_oauth::SigningKeyError),
    #[error("IDC_RP_ID / IDC_RP_ORIGINS: {0}")]
    RelyingParty(#[from] idconsent_webauthn::ConfigError),
    #[error("app tokens: {0}")]
    AppTokens(#[from] idconsent_enduser::ports::AccessTokenError),
    #[error(transparent)]
    Approvals(#[from] idconsent_approval::DuplicateKind),
    #[error(transparent)]
    Blobs(#[from] idconsent_blob_s3::S3ConfigError),
    #[error("re-sealing stored secrets: {0}")]
    Reseal(#[from] idconsent_store_diesel::ResealError),
    #[error("document signing identity (IDC_SIGNING_CERT / IDC_SIGNING_KEY): {0}")]
    SigningIdentity(#[from] idconsent_pdf_sign::IdentityError),
    #[error("PDF parser (IDC_UNTRUSTED_WORKER): {0}")]
    Parsers(idconsent_untrusted::RunError),
    #[error("time-stamping authority (IDC_TSA_URL / IDC_TSA_CERTS / IDC_TSA_POLICY): {0}")]
    TimestampAuthority(String),
}

/// Builds every service of the deployment.
pub async fn build(config: Config, db: Db) -> Result<Deployment, WiringError> {
    let config = Arc::new(config);
    let clock: Arc<dyn Clock> = config
        .clock
        .clone()
        .unwrap_or_else(|| Arc::new(SystemClock));
    let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), random.clone()));
    let master = Arc::new(MasterKey::new(*config.master_key.as_bytes()));
    let wake = Wake::default();
    let notifications = notification::build(&config, &db, &clock, &ids, &wake)?;
    let billing = billing::build(&config, &db, &clock, &ids);
    let shared = Shared {
        vault: Arc::new(AesGcmVault::new(&master)),
        hasher: Arc::new(HmacKeyedHash::new(&master)),
        notifier: notifications.notifier.clone(),
        blobs: blobs::build(&config, &db, &clock)?,
        metering: billing.metering.clone(),
        config: config.clone(),
        db: db.clone(),
        clock,
        ids,
        random,
        master,
        wake: wake.clone(),
    };

    // Secrets sealed before they were bound to their rows (ADR 0026) are re-sealed before
    // anything reads them; a no-op once done.
    let resealed = reseal_legacy_secrets(&db, shared.vault.clone()).await?;
    if resealed > 0 {
        tracing::info!(resealed, "legacy sealed secrets re-sealed for their rows");
    }

    let merchants = merchant::build(&shared)?;
    let webhooks = webhook::build(&shared, &merchants)?;
    let consents = consent::build(&shared);
    let (oauth, oauth_keys) = oauth::build(&shared, &consents, &merchants).await?;
    let oidc = oidc::build(&shared, &oauth, &oauth_keys);

    let consent_approvals = Arc::new(
        ConsentApprovals::new(consents.service.clone(), merchants.directory.clone())
            .with_extension(Arc::new(OAuthApprovals(oauth.clone()))),
    );
    let mut approvals = ApprovalRegistry::new();
    approvals.register(consent_approvals.clone())?;
    approvals.register(Arc::new(enduser::device_additions(&shared)))?;
    // Sandbox invitations reach the dev mailbox in dev mode, only the team in production, and
    // count against the application's send allowance.
    let invitations = Arc::new(Invitations::new(
        notifications.send_limits.clone(),
        merchants.team.clone(),
        match config.mode {
            Mode::Dev => SandboxRecipients::DevMailbox,
            Mode::Production => SandboxRecipients::Team,
        },
    ));
    let signatures = signature::build(&shared, invitations.clone()).await?;
    approvals.register(Arc::new(SignatureApprovals::new(signatures.clone())))?;
    let mandates = mandate::build(&shared, invitations);
    let identity = identity::build(&shared);
    approvals.register(Arc::new(MandateApprovals::new(
        mandates.clone(),
        merchants.directory.clone(),
    )))?;
    #[cfg(feature = "idconsent-approval-example")]
    approvals.register(idconsent_approval_example::notes_in(&config.data_dir))?;
    let approvals = Arc::new(approvals);
    let hosted = enduser::hosted(&shared, approvals.clone())?;
    let endusers = enduser::build(&shared, approvals)?;

    // The deployment's gates first (plan limits), then any a test or embedder adds.
    let gates = GateChain::new().then(billing.rate_limits.clone());
    let gates = config
        .extra_gates
        .iter()
        .fold(gates, |chain, gate| chain.then(gate.clone()));
    let requests = Arc::new(merchants.request_gate(gates));

    let qr_codes = Arc::new(idconsent_qrcode::QrCodeService::new(
        Arc::new(idconsent_store_diesel::DieselQrCodeStore::new(
            shared.db.clone(),
        )),
        consents.qr.clone(),
        shared.ids.clone(),
        shared.clock.clone(),
    ));
    let services = Services {
        system: Arc::new(SystemStatus::new(db, notifications.dispatcher.clone())),
        requests,
        merchants: merchants.service,
        consents: consents.service,
        consent_approvals,
        qr_codes,
        signatures,
        mandates,
        identity,
        hosted,
        billing: billing.service,
        oauth,
        oauth_keys,
        oidc_clients: oidc.clients,
        oidc: oidc.provider,
        endusers,
        webhooks: webhooks.log,
        notifier: notifications.notifier,
        send_limits: notifications.send_limits,
        page_nonces: PageNonces::new(shared.random.clone()),
    };
    let background = Background {
        requests: services.requests.clone(),
        send_limits: services.send_limits.clone(),
        endusers: services.endusers.clone(),
        hosted: services.hosted.clone(),
        consents: services.consents.clone(),
        oauth_keys: services.oauth_keys.clone(),
        signatures: services.signatures.clone(),
        mandates: services.mandates.clone(),
        identity: services.identity.clone(),
        billing: services.billing.clone(),
        rate_limits: billing.rate_limits,
        notifications: notifications.dispatcher,
        webhooks: webhooks.dispatcher,
        wake,
    };
    Ok(Deployment {
        request_ids: RequestIds::new(shared.ids.clone()),
        config,
        services,
        background,
    })
}
