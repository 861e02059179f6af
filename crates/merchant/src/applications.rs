//! Applications and their credentials: creation, changes, key and webhook-secret rotation.

use idconsent_kernel::id::{ApplicationId, ClientId, TypedId};
use idconsent_kernel::{
    Environment, Intent, Page, PageRequest, Timestamp, ValidationErrors, WebUrl,
};

use crate::credentials::{ApiKey, generate_secret, generate_webhook_secret};
use crate::error::MerchantError;
use crate::model::{Application, KeyRecord, MerchantStatus, Permission, RequestTypes, sealing};
use crate::ports::{NewKey, RepositoryError, conflicts};
use crate::service::{Actor, MerchantService, required_text};

/// The `KeyedHash` purpose under which API keys are looked up.
pub const API_KEY_HASH_PURPOSE: &str = "api-key";

/// Application fields as received; on update, absent fields stay as they are.
#[derive(Debug, Clone, Default)]
pub struct ApplicationInput {
    pub name: Option<String>,
    pub callback_url: Option<String>,
    pub redirect_uris: Option<Vec<String>>,
    pub request_types: Option<Vec<String>>,
}

/// An application with its API keys opened for the dashboard (never its secrets).
#[derive(Debug, Clone)]
pub struct ApplicationView {
    pub application: Application,
    pub sandbox_api_key: ApiKey,
    pub live_api_key: Option<ApiKey>,
}

/// A new application and the secrets shown this once.
#[derive(Debug, Clone)]
pub struct CreatedApplication {
    pub view: ApplicationView,
    pub secret: String,
    pub webhook_secret: String,
}

/// A rotated API key.
#[derive(Debug, Clone)]
pub struct RotatedKey {
    pub environment: Environment,
    pub api_key: ApiKey,
    pub generated_at: Timestamp,
}

/// A rotated request-signing secret and when the previous one stops verifying.
#[derive(Debug, Clone)]
pub struct RotatedSecret {
    pub secret: String,
    pub previous_expires_at: Timestamp,
}

/// A rotated webhook secret and when the previous one stops signing.
#[derive(Debug, Clone)]
pub struct RotatedWebhookSecret {
    pub secret: String,
    pub previous_expires_at: Timestamp,
}

const MAX_REDIRECT_URIS: usize = 20;

impl MerchantService {
    pub async fn create_application(
        &self,
        actor: &Actor,
        input: ApplicationInput,
    ) -> Result<CreatedApplication, MerchantError> {
        actor.require(Permission::ManageApplications)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        let live = merchant.status == MerchantStatus::Live;
        let mut errors = ValidationErrors::new();
        let name = match &input.name {
            Some(name) => required_text(&mut errors, "name", name, 100),
            None => {
                errors.push("name", "is required");
                None
            }
        };
        let callback_url = match &input.callback_url {
            Some(url) => self.check_callback_url(&mut errors, url, live),
            None => {
                errors.push("callbackUrl", "is required");
                None
            }
        };
        let redirect_uris = match &input.redirect_uris {
            Some(uris) => check_redirect_uris(&mut errors, uris),
            None => Some(Vec::new()),
        };
        let request_types = match &input.request_types {
            Some(types) => check_request_types(&mut errors, types),
            None => Some(RequestTypes::all()),
        };
        let (name, callback_url, redirect_uris, request_types) =
            errors.finish_with(|| Some((name?, callback_url?, redirect_uris?, request_types?)))?;
        let existing = self
            .ports
            .applications
            .list(&merchant.id, PageRequest::default())
            .await?
            .total;
        if existing >= self.settings.max_applications {
            return Err(MerchantError::Conflict(format!(
                "A merchant can have at most {} applications",
                self.settings.max_applications
            )));
        }

        let now = self.now();
        let random = self.ports.random.as_ref();
        let sandbox_key = ApiKey::generate(Environment::Sandbox, random);
        let live_key = live.then(|| ApiKey::generate(Environment::Live, random));
        let secret = generate_secret(random);
        let webhook_secret = generate_webhook_secret(random);
        let id = self.ports.ids.next::<ApplicationId>();
        let application = Application {
            merchant_id: merchant.id.clone(),
            client_id: self.ports.ids.next::<ClientId>(),
            name,
            callback_url,
            redirect_uris,
            request_types,
            sandbox_key: self.key_record(&id, &sandbox_key, now),
            live_key: live_key.as_ref().map(|key| self.key_record(&id, key, now)),
            secret: self
                .ports
                .vault
                .seal(secret.as_bytes(), sealing::request_secret(&id)),
            webhook_secret: self
                .ports
                .vault
                .seal(webhook_secret.as_bytes(), sealing::webhook_secret(&id)),
            id,
            previous_webhook_secret: None,
            previous_secret: None,
            created_at: now,
            updated_at: now,
        };
        let live_hash = live_key.as_ref().map(|key| self.key_hash(key));
        match self
            .ports
            .applications
            .create(
                &application,
                &self.key_hash(&sandbox_key),
                live_hash.as_deref(),
            )
            .await
        {
            // The merchant went live (or stopped being live) between the read and the write.
            Err(RepositoryError::Conflict(conflicts::WRONG_STATUS)) => {
                return Err(MerchantError::Conflict(
                    "The account changed status; try again".into(),
                ));
            }
            other => other?,
        }
        Ok(CreatedApplication {
            view: ApplicationView {
                application,
                sandbox_api_key: sandbox_key,
                live_api_key: live_key,
            },
            secret,
            webhook_secret,
        })
    }

    pub async fn list_applications(
        &self,
        actor: &Actor,
        page: PageRequest,
    ) -> Result<Page<ApplicationView>, MerchantError> {
        let page = self
            .ports
            .applications
            .list(&actor.user.merchant_id, page)
            .await?;
        let mut views = Vec::with_capacity(page.items.len());
        for application in page.items {
            views.push(self.view(application)?);
        }
        Ok(Page {
            items: views,
            request: page.request,
            total: page.total,
        })
    }

    pub async fn application(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<ApplicationView, MerchantError> {
        let application = self.own_application(actor, id).await?;
        self.view(application)
    }

    pub async fn update_application(
        &self,
        actor: &Actor,
        id: &str,
        input: ApplicationInput,
    ) -> Result<ApplicationView, MerchantError> {
        actor.require(Permission::ManageApplications)?;
        let mut application = self.own_application(actor, id).await?;
        let live =
            self.load_merchant(&actor.user.merchant_id).await?.status == MerchantStatus::Live;
        let mut errors = ValidationErrors::new();
        if let Some(name) = &input.name
            && let Some(name) = required_text(&mut errors, "name", name, 100)
        {
            application.name = name;
        }
        if let Some(url) = &input.callback_url
            && let Some(url) = self.check_callback_url(&mut errors, url, live)
        {
            application.callback_url = url;
        }
        if let Some(uris) = &input.redirect_uris
            && let Some(uris) = check_redirect_uris(&mut errors, uris)
        {
            application.redirect_uris = uris;
        }
        if let Some(types) = &input.request_types
            && let Some(types) = check_request_types(&mut errors, types)
        {
            application.request_types = types;
        }
        errors.finish()?;
        application.updated_at = self.now();
        self.ports.applications.update(&application).await?;
        self.view(application)
    }

    /// Replaces the API key of one environment; the old key fails at once, the secret stays.
    pub async fn rotate_key(
        &self,
        actor: &Actor,
        id: &str,
        environment: &str,
    ) -> Result<RotatedKey, MerchantError> {
        actor.require(Permission::RotateCredentials)?;
        let environment = Environment::parse(environment)
            .ok_or_else(|| ValidationErrors::single("environment", "must be sandbox or live"))?;
        let application = self.own_application(actor, id).await?;
        if environment == Environment::Live && application.live_key.is_none() {
            return Err(MerchantError::Conflict(
                "Live credentials do not exist until the account is approved".into(),
            ));
        }
        let now = self.now();
        let api_key = ApiKey::generate(environment, self.ports.random.as_ref());
        let key = NewKey {
            environment,
            hash: self.key_hash(&api_key),
            sealed: self.ports.vault.seal(
                api_key.as_str().as_bytes(),
                sealing::api_key(&application.id, environment),
            ),
            generated_at: now,
        };
        match self
            .ports
            .applications
            .rotate_key(&application.id, &key)
            .await
        {
            Err(RepositoryError::Conflict(conflicts::NO_LIVE_CREDENTIALS)) => {
                return Err(MerchantError::Conflict(
                    "Live credentials do not exist until the account is approved".into(),
                ));
            }
            other => other?,
        }
        Ok(RotatedKey {
            environment,
            api_key,
            generated_at: now,
        })
    }

    /// Replaces the webhook secret; the previous one keeps signing for 24 hours so receivers
    /// can switch without losing events.
    pub async fn rotate_webhook_secret(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<RotatedWebhookSecret, MerchantError> {
        actor.require(Permission::RotateCredentials)?;
        let application = self.own_application(actor, id).await?;
        let now = self.now();
        let secret = generate_webhook_secret(self.ports.random.as_ref());
        let previous_expires_at = now.plus(self.settings.webhook_secret_overlap);
        let sealed = self
            .ports
            .vault
            .seal(secret.as_bytes(), sealing::webhook_secret(&application.id));
        self.ports
            .applications
            .rotate_webhook_secret(&application.id, &sealed, previous_expires_at, now)
            .await?;
        Ok(RotatedWebhookSecret {
            secret,
            previous_expires_at,
        })
    }

    /// Replaces the `sk_` request-signing secret (owner, admin); requests signed with the
    /// previous one are still accepted for 24 hours, so integrations can switch without
    /// downtime.
    pub async fn rotate_secret(
        &self,
        actor: &Actor,
        id: &str,
    ) -> Result<RotatedSecret, MerchantError> {
        actor.require(Permission::RotateSigningSecret)?;
        let application = self.own_application(actor, id).await?;
        let now = self.now();
        let secret = generate_secret(self.ports.random.as_ref());
        let previous_expires_at = now.plus(self.settings.webhook_secret_overlap);
        let sealed = self
            .ports
            .vault
            .seal(secret.as_bytes(), sealing::request_secret(&application.id));
        self.ports
            .applications
            .rotate_secret(&application.id, &sealed, previous_expires_at, now)
            .await?;
        Ok(RotatedSecret {
            secret,
            previous_expires_at,
        })
    }

    /// The application if it belongs to the actor's merchant; anything else is "not found".
    async fn own_application(&self, actor: &Actor, id: &str) -> Result<Application, MerchantError> {
        let found = match ApplicationId::parse(id) {
            Ok(id) => self.ports.applications.find(&id).await?,
            Err(_) => None,
        };
        found
            .filter(|application| application.merchant_id == actor.user.merchant_id)
            .ok_or(MerchantError::NotFound("Application"))
    }

    pub(crate) fn view(&self, application: Application) -> Result<ApplicationView, MerchantError> {
        let sandbox_api_key = self.open_key(
            &application.id,
            Environment::Sandbox,
            &application.sandbox_key,
        )?;
        let live_api_key = application
            .live_key
            .as_ref()
            .map(|record| self.open_key(&application.id, Environment::Live, record))
            .transpose()?;
        Ok(ApplicationView {
            application,
            sandbox_api_key,
            live_api_key,
        })
    }

    fn open_key(
        &self,
        application: &ApplicationId,
        environment: Environment,
        record: &KeyRecord,
    ) -> Result<ApiKey, MerchantError> {
        let plain = self
            .ports
            .vault
            .open(&record.sealed, sealing::api_key(application, environment))
            .map_err(MerchantError::unavailable)?;
        let text = String::from_utf8(plain)
            .map_err(|_| MerchantError::Unavailable("stored API key is not text".into()))?;
        ApiKey::parse(&text)
            .map(|(key, _)| key)
            .map_err(MerchantError::unavailable)
    }

    fn key_record(&self, application: &ApplicationId, key: &ApiKey, at: Timestamp) -> KeyRecord {
        KeyRecord {
            sealed: self.ports.vault.seal(
                key.as_str().as_bytes(),
                sealing::api_key(application, key.environment()),
            ),
            generated_at: at,
        }
    }

    pub(crate) fn key_hash(&self, key: &ApiKey) -> String {
        self.ports
            .hasher
            .hex(API_KEY_HASH_PURPOSE, key.as_str().as_bytes())
    }

    pub(crate) fn new_live_key(
        &self,
        application: &ApplicationId,
        at: Timestamp,
    ) -> (ApiKey, NewKey) {
        let api_key = ApiKey::generate(Environment::Live, self.ports.random.as_ref());
        let key = NewKey {
            environment: Environment::Live,
            hash: self.key_hash(&api_key),
            sealed: self.ports.vault.seal(
                api_key.as_str().as_bytes(),
                sealing::api_key(application, Environment::Live),
            ),
            generated_at: at,
        };
        (api_key, key)
    }

    fn check_callback_url(
        &self,
        errors: &mut ValidationErrors,
        text: &str,
        live: bool,
    ) -> Option<WebUrl> {
        let checked = WebUrl::parse(text).and_then(|url| {
            url.check_target(live, self.settings.allow_private_callbacks)
                .map(|()| url)
        });
        errors.check("callbackUrl", checked)
    }
}

/// Redirect URIs: https, or http on a loopback host (RFC 8252 native apps); at most 20.
fn check_redirect_uris(errors: &mut ValidationErrors, uris: &[String]) -> Option<Vec<WebUrl>> {
    if uris.len() > MAX_REDIRECT_URIS {
        errors.push(
            "redirectUris",
            format!("must list at most {MAX_REDIRECT_URIS} URIs"),
        );
        return None;
    }
    let mut checked = Vec::with_capacity(uris.len());
    let mut valid = true;
    for (index, text) in uris.iter().enumerate() {
        let field = format!("redirectUris[{index}]");
        match WebUrl::parse(text) {
            Ok(url) if url.is_https() || is_loopback(&url) => {
                if !checked.contains(&url) {
                    checked.push(url);
                }
            }
            Ok(_) => {
                errors.push(field, "must use https (http is allowed only for localhost)");
                valid = false;
            }
            Err(error) => {
                errors.push(field, error.to_string());
                valid = false;
            }
        }
    }
    valid.then_some(checked)
}

fn is_loopback(url: &WebUrl) -> bool {
    matches!(url.host(), "localhost" | "127.0.0.1" | "[::1]")
}

fn check_request_types(errors: &mut ValidationErrors, types: &[String]) -> Option<RequestTypes> {
    let mut intents = Vec::with_capacity(types.len());
    for (index, text) in types.iter().enumerate() {
        match Intent::parse(text) {
            Some(intent) => intents.push(intent),
            None => {
                errors.push(
                    format!("requestTypes[{index}]"),
                    "must be LOGIN, TRANSACTION, SIGNATURE or OAUTH",
                );
                return None;
            }
        }
    }
    let types = RequestTypes::new(intents);
    if types.is_none() {
        errors.push("requestTypes", "must enable at least one request type");
    }
    types
}
