//! Wiring: builds every adapter and domain service once and shares them with the handlers.

use std::sync::Arc;

use idconsent_auth_hmac::HmacRequestSignatures;
use idconsent_blob_fs::FsBlobStore;
use idconsent_consent::{ConsentService, ConsentSettings, FloodLimits};
use idconsent_enduser::{EndUserPorts, EndUserService, EndUserSettings};
use idconsent_jose::{Es256KeyRing, Es256TokenSigner, HmacAppTokens, HmacSessionTokens};
use idconsent_kernel::QrRenderer;
use idconsent_kernel::{
    Clock, IdGenerator, KeyedHash, OsRandom, RandomSource, SecretVault, SystemClock, UlidGenerator,
};
use idconsent_merchant::ports::BusinessRegistry;
use idconsent_merchant::{
    ApiAccess, Idempotency, MerchantPorts, MerchantService, MerchantSettings,
};
use idconsent_notification::{
    Channel, Dispatcher, MessageStore, MessageTransport, Notifier, Nudge, RetryPolicy,
};
use idconsent_notify::{DevMailbox, HttpSms, HttpSmsConfig, SmtpEmail};
use idconsent_oauth::{OAuthPorts, OAuthService, OAuthSettings};
use idconsent_password_argon2::Argon2Passwords;
use idconsent_qr_render::QrCodegenRenderer;
use idconsent_registry::{HttpRegistry, SandboxRegistry};
use idconsent_store_diesel::{
    Db, DieselDeliveryStore, DieselEndUserStore, DieselMerchantStore, DieselMessageStore,
    DieselOAuthStore, DieselSessionStore,
};
use idconsent_vault_ring::{AesGcmVault, HmacKeyedHash, MasterKey};
use idconsent_webauthn::WebauthnCeremony;
use idconsent_webhook::DeliveryStore;
use idconsent_webhook_http::HttpWebhookTransport;
use secrecy::ExposeSecret;
use tokio::sync::Notify;

use crate::adapters::{
    ApplicationSigningSecrets, EnrolledClaims, EnrolledRecipients, PurposeTargets,
};
use crate::config::{Config, Mode, RegistrySettings};
use crate::http::metrics::Metrics;
use crate::http::openapi::ApiDocs;

/// Everything a handler or worker may use. Cloned cheaply (all `Arc`s).
#[derive(Debug)]
pub struct AppContext {
    pub config: Arc<Config>,
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub ids: Arc<dyn IdGenerator>,
    pub random: Arc<dyn RandomSource>,
    pub messages: Arc<dyn MessageStore>,
    pub notifier: Arc<Notifier>,
    pub dispatcher: Arc<Dispatcher>,
    pub vault: Arc<dyn SecretVault>,
    pub hasher: Arc<dyn KeyedHash>,
    pub merchants: Arc<MerchantService>,
    pub access: Arc<ApiAccess>,
    pub idempotency: Arc<Idempotency>,
    pub deliveries: Arc<dyn DeliveryStore>,
    pub webhooks: Arc<idconsent_webhook::Dispatcher>,
    pub consents: Arc<ConsentService>,
    pub endusers: Arc<EndUserService>,
    pub oauth: Arc<OAuthService>,
    pub qr: Arc<dyn QrRenderer>,
    /// Forgets expired replay fingerprints and idempotency keys.
    pub merchant_store: Arc<DieselMerchantStore>,
    pub metrics: Arc<Metrics>,
    pub docs: Arc<ApiDocs>,
    pub wake: Wake,
}

/// Wakes background workers when there is new work, so nothing waits for the next poll.
#[derive(Debug, Clone, Default)]
pub struct Wake {
    pub notifications: Arc<Notify>,
    pub webhooks: Arc<Notify>,
}

#[derive(Debug)]
struct NotifyNudge(Arc<Notify>);

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
    #[error("OAuth signing keys (IDC_OAUTH_KEYS_DIR): {0}")]
    OAuthKeys(#[from] idconsent_jose::KeyRingError),
    #[error("IDC_RP_ID / IDC_RP_ORIGINS: {0}")]
    RelyingParty(#[from] idconsent_webauthn::ConfigError),
    #[error("app tokens: {0}")]
    AppTokens(#[from] idconsent_enduser::ports::AccessTokenError),
}

impl AppContext {
    pub fn build(config: Config, db: Db) -> Result<Self, WiringError> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
        let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), random.clone()));
        let wake = Wake::default();

        let messages: Arc<dyn MessageStore> = Arc::new(DieselMessageStore::new(db.clone()));
        let notifier = Arc::new(Notifier::new(
            messages.clone(),
            clock.clone(),
            ids.clone(),
            Some(Arc::new(NotifyNudge(wake.notifications.clone()))),
        ));
        let dispatcher = Arc::new(Dispatcher::new(
            messages.clone(),
            transports(&config)?,
            clock.clone(),
            RetryPolicy::default(),
        ));

        let master = MasterKey::new(*config.master_key.as_bytes());
        let vault: Arc<dyn SecretVault> = Arc::new(AesGcmVault::new(&master));
        let hasher: Arc<dyn KeyedHash> = Arc::new(HmacKeyedHash::new(&master));
        let merchant_store = Arc::new(DieselMerchantStore::new(db.clone()));
        let registry: Arc<dyn BusinessRegistry> = match &config.registry {
            RegistrySettings::Sandbox => Arc::new(SandboxRegistry),
            RegistrySettings::Http { url, auth_header } => Arc::new(HttpRegistry::new(
                url,
                auth_header.as_ref().map(|header| header.expose_secret()),
            )?),
        };
        let merchants = Arc::new(MerchantService::new(
            MerchantPorts {
                merchants: merchant_store.clone(),
                team: merchant_store.clone(),
                codes: merchant_store.clone(),
                applications: merchant_store.clone(),
                registry,
                passwords: Arc::new(Argon2Passwords::new()?),
                tokens: Arc::new(HmacSessionTokens::new(
                    &master.derive("merchant-session/hs256"),
                )?),
                vault: vault.clone(),
                hasher: hasher.clone(),
                blobs: Arc::new(FsBlobStore::new(config.data_dir.join("blobs"))),
                notifications: notifier.clone(),
                clock: clock.clone(),
                ids: ids.clone(),
                random: random.clone(),
            },
            MerchantSettings::new(config.dashboard_url.clone(), config.allow_private_callbacks),
        ));
        let access = Arc::new(ApiAccess::new(
            merchant_store.clone(),
            vault.clone(),
            hasher.clone(),
            Arc::new(HmacRequestSignatures),
            merchant_store.clone(),
            clock.clone(),
        ));
        let idempotency = Arc::new(Idempotency::new(
            merchant_store.clone(),
            hasher.clone(),
            clock.clone(),
        ));

        let deliveries: Arc<dyn DeliveryStore> = Arc::new(DieselDeliveryStore::new(db.clone()));
        let webhooks = Arc::new(idconsent_webhook::Dispatcher::new(
            deliveries.clone(),
            Arc::new(HttpWebhookTransport::new(config.allow_private_callbacks)?),
            Arc::new(idconsent_auth_hmac::HmacWebhookSigner),
            Arc::new(ApplicationSigningSecrets {
                applications: merchant_store.clone(),
                vault: vault.clone(),
                clock: clock.clone(),
            }),
            clock.clone(),
            config.webhook_retry.clone(),
        ));
        let outbox_written: Arc<dyn Nudge> = Arc::new(NotifyNudge(wake.webhooks.clone()));
        let enduser_store = Arc::new(DieselEndUserStore::new(db.clone()));
        let consents = Arc::new(ConsentService::new(
            Arc::new(DieselSessionStore::new(db.clone())),
            Arc::new(EnrolledRecipients {
                users: enduser_store.clone(),
            }),
            clock.clone(),
            ids.clone(),
            Some(outbox_written),
            ConsentSettings {
                ttl: config.consent_ttl,
                app_scheme: config.app_scheme.clone(),
                flood: FloodLimits::default(),
                allow_private_callbacks: config.allow_private_callbacks,
            },
        ));
        let keys = if config.mode == Mode::Dev {
            Es256KeyRing::open_or_create(config.oauth_keys_dir.clone(), clock.now())
        } else {
            Es256KeyRing::open(config.oauth_keys_dir.clone())
        }?;
        let oauth = Arc::new(OAuthService::new(
            OAuthPorts {
                consents: consents.clone(),
                store: Arc::new(DieselOAuthStore::new(db.clone())),
                claims: Arc::new(EnrolledClaims {
                    users: enduser_store.clone(),
                }),
                signer: Arc::new(Es256TokenSigner::new(
                    keys,
                    config.base_url.clone(),
                    clock.clone(),
                )),
                vault: vault.clone(),
                hasher: hasher.clone(),
                clock: clock.clone(),
                random: random.clone(),
                ids: ids.clone(),
            },
            OAuthSettings {
                code_ttl: config.oauth_code_ttl,
                ..OAuthSettings::new(config.base_url.clone())
            },
        ));
        let endusers = Arc::new(EndUserService::new(
            EndUserPorts {
                enrollments: enduser_store.clone(),
                devices: enduser_store.clone(),
                challenges: enduser_store.clone(),
                refresh_tokens: enduser_store,
                passkeys: Arc::new(WebauthnCeremony::from_origin_list(
                    &config.rp_id,
                    &config.rp_origins,
                )?),
                access_tokens: Arc::new(HmacAppTokens::new(&master.derive("app-access/hs256"))?),
                targets: Arc::new(PurposeTargets {
                    consents: consents.clone(),
                    oauth: oauth.clone(),
                    applications: merchant_store.clone(),
                    merchants: merchant_store.clone(),
                }),
                notifications: notifier.clone(),
                events: deliveries.clone(),
                hasher: hasher.clone(),
                clock: clock.clone(),
                ids: ids.clone(),
                random: random.clone(),
                outbox_written: Some(Arc::new(NotifyNudge(wake.webhooks.clone()))),
            },
            EndUserSettings::default(),
        ));

        Ok(Self {
            docs: Arc::new(ApiDocs::build(config.mode)),
            config: Arc::new(config),
            db: db.clone(),
            clock,
            ids,
            random,
            messages,
            notifier,
            dispatcher,
            vault,
            hasher,
            merchants,
            access,
            idempotency,
            merchant_store,
            deliveries,
            webhooks,
            consents,
            endusers,
            oauth,
            qr: Arc::new(QrCodegenRenderer::default()),
            metrics: Arc::new(Metrics::new()),
            wake,
        })
    }
}

/// Dev mode delivers every channel to the dev mailbox; production uses what is configured and
/// leaves the rest queued.
fn transports(config: &Config) -> Result<Vec<Arc<dyn MessageTransport>>, WiringError> {
    let timeout = std::time::Duration::from_secs(30);
    if config.mode == Mode::Dev {
        return Ok(Channel::ALL
            .into_iter()
            .map(|channel| Arc::new(DevMailbox::new(channel)) as Arc<dyn MessageTransport>)
            .collect());
    }
    let mut transports: Vec<Arc<dyn MessageTransport>> = Vec::new();
    if let Some(smtp) = &config.smtp {
        transports.push(Arc::new(SmtpEmail::new(
            smtp.url.expose_secret(),
            &smtp.from,
            timeout,
        )?));
    }
    if let Some(sms) = &config.sms {
        transports.push(Arc::new(HttpSms::new(&HttpSmsConfig {
            url: sms.url.clone(),
            auth_header: sms
                .auth_header
                .as_ref()
                .map(|h| h.expose_secret().to_owned()),
            timeout,
        })?));
    }
    Ok(transports)
}
