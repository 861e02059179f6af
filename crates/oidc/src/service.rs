//! Configuring clients (merchant JWT, owner/admin) and authenticating them (token endpoint).

use std::sync::Arc;

use idconsent_kernel::id::{ApplicationId, MerchantId, TypedId};
use idconsent_kernel::{Clock, ErrorCategory, KeyedHash, RandomSource, ValidationErrors};

use crate::model::{AuthMethod, ClientConfig, ClientInput};
use crate::ports::{ClientApplications, ClientStore, StoreError};
use crate::secret;

#[derive(Debug, thiserror::Error)]
pub enum OidcClientError {
    #[error("{0}")]
    Invalid(ValidationErrors),
    #[error("{0}")]
    NotFound(&'static str),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("{0}")]
    Conflict(&'static str),
    #[error("oidc client storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl OidcClientError {
    pub fn category(&self) -> ErrorCategory {
        match self {
            OidcClientError::Invalid(_) => ErrorCategory::Validation,
            OidcClientError::NotFound(_) => ErrorCategory::NotFound,
            OidcClientError::Forbidden(_) => ErrorCategory::Forbidden,
            OidcClientError::Conflict(_) => ErrorCategory::Conflict,
            OidcClientError::Unavailable(_) => ErrorCategory::Internal,
        }
    }
}

impl From<StoreError> for OidcClientError {
    fn from(error: StoreError) -> Self {
        OidcClientError::Unavailable(Box::new(error))
    }
}

impl From<ValidationErrors> for OidcClientError {
    fn from(errors: ValidationErrors) -> Self {
        OidcClientError::Invalid(errors)
    }
}

/// The merchant user asking, as the merchant domain authenticated them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientManager {
    pub merchant_id: MerchantId,
    /// Owners and admins configure clients (their secrets sign users in).
    pub may_configure: bool,
}

/// A configuration as written, with the secret when this call created it.
#[derive(Debug, Clone)]
pub struct Configured {
    pub config: ClientConfig,
    /// Shown this once: on the first configuration with a secret method, and on rotation.
    pub secret: Option<String>,
}

/// What a client presented at the token (or introspection, revocation) endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PresentedCredentials {
    /// `Authorization: Basic` (RFC 6749 §2.3.1: both parts form-urlencoded, already decoded).
    Basic { client_id: String, secret: String },
    /// `client_id` and `client_secret` in the form body.
    Post { client_id: String, secret: String },
}

/// A client whose credentials verified.
#[derive(Debug, Clone)]
pub struct AuthenticatedClient {
    pub config: ClientConfig,
    pub application: crate::ports::ClientApplication,
}

#[derive(Debug, thiserror::Error)]
pub enum ClientAuthError {
    /// RFC 6749 `invalid_client`: unknown client, wrong secret, or a method the client did
    /// not register.
    #[error("client authentication failed")]
    InvalidClient,
    #[error("oidc client storage failed")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<StoreError> for ClientAuthError {
    fn from(error: StoreError) -> Self {
        ClientAuthError::Unavailable(Box::new(error))
    }
}

#[derive(Debug, Clone)]
pub struct OidcClients {
    store: Arc<dyn ClientStore>,
    applications: Arc<dyn ClientApplications>,
    hasher: Arc<dyn KeyedHash>,
    random: Arc<dyn RandomSource>,
    clock: Arc<dyn Clock>,
}

impl OidcClients {
    pub fn new(
        store: Arc<dyn ClientStore>,
        applications: Arc<dyn ClientApplications>,
        hasher: Arc<dyn KeyedHash>,
        random: Arc<dyn RandomSource>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            store,
            applications,
            hasher,
            random,
            clock,
        }
    }

    /// The application if it is the manager's merchant's; anything else is "not found".
    async fn own_application(
        &self,
        manager: &ClientManager,
        id: &str,
    ) -> Result<crate::ports::ClientApplication, OidcClientError> {
        let not_found = OidcClientError::NotFound("Application not found");
        let Ok(id) = ApplicationId::parse(id) else {
            return Err(not_found);
        };
        match self.applications.find(&id).await? {
            Some(app) if app.merchant_id == manager.merchant_id => Ok(app),
            _ => Err(not_found),
        }
    }

    fn require_configure(manager: &ClientManager) -> Result<(), OidcClientError> {
        if manager.may_configure {
            Ok(())
        } else {
            Err(OidcClientError::Forbidden(
                "Only owners and admins can configure OpenID Connect clients",
            ))
        }
    }

    /// Creates or replaces the configuration. A secret is made (and returned) when the client
    /// uses a secret method and has none yet; switching to `private_key_jwt` drops it.
    pub async fn configure(
        &self,
        manager: &ClientManager,
        application: &str,
        input: ClientInput,
    ) -> Result<Configured, OidcClientError> {
        let app = self.own_application(manager, application).await?;
        Self::require_configure(manager)?;
        let settings = input.validate(app.environment)?;
        let now = self.clock.now();
        let existing = self.store.find(&app.id).await?;
        let mut config = ClientConfig {
            application_id: app.id.clone(),
            redirect_uris: settings.redirect_uris,
            post_logout_redirect_uris: settings.post_logout_redirect_uris,
            auth_method: settings.auth_method,
            jwks: settings.jwks,
            jwks_uri: settings.jwks_uri,
            delivery_mode: settings.delivery_mode,
            notification_endpoint: settings.notification_endpoint,
            require_par: settings.require_par,
            dpop_bound: settings.dpop_bound,
            profile: settings.profile,
            secret_hash: None,
            created_at: now,
            updated_at: now,
        };
        let Some(existing) = existing else {
            let secret = config
                .auth_method
                .uses_secret()
                .then(|| self.new_secret(&mut config));
            match self.store.insert(&config).await {
                Ok(()) => return Ok(Configured { config, secret }),
                // A concurrent first PUT won: ours becomes an update, and its secret stands.
                Err(StoreError::Duplicate) => return self.replace(config).await,
                Err(other) => return Err(other.into()),
            }
        };
        config.created_at = existing.created_at;
        config.secret_hash = existing.secret_hash;
        self.replace(config).await
    }

    /// Writes the settings of an existing configuration, then brings the secret in line with
    /// the method: made when a secret method has none, dropped for `private_key_jwt`.
    async fn replace(&self, mut config: ClientConfig) -> Result<Configured, OidcClientError> {
        if !self.store.update(&config).await? {
            return Err(OidcClientError::Conflict(
                "The configuration changed meanwhile; try again",
            ));
        }
        let current =
            self.store
                .find(&config.application_id)
                .await?
                .ok_or(OidcClientError::Conflict(
                    "The configuration changed meanwhile; try again",
                ))?;
        config.secret_hash = current.secret_hash;
        let mut secret = None;
        if config.auth_method.uses_secret() && config.secret_hash.is_none() {
            secret = Some(self.new_secret(&mut config));
        } else if !config.auth_method.uses_secret() && config.secret_hash.is_some() {
            config.secret_hash = None;
        } else {
            return Ok(Configured { config, secret });
        }
        self.store
            .set_secret(
                &config.application_id,
                config.secret_hash.as_deref(),
                config.updated_at,
            )
            .await?;
        Ok(Configured { config, secret })
    }

    fn new_secret(&self, config: &mut ClientConfig) -> String {
        let secret = secret::generate(self.random.as_ref());
        config.secret_hash = Some(secret::client_secret_hash(
            self.hasher.as_ref(),
            &config.application_id,
            &secret,
        ));
        secret
    }

    /// The configuration (never the secret). Any merchant user may read it.
    pub async fn read(
        &self,
        manager: &ClientManager,
        application: &str,
    ) -> Result<ClientConfig, OidcClientError> {
        let app = self.own_application(manager, application).await?;
        self.store
            .find(&app.id)
            .await?
            .ok_or(OidcClientError::NotFound(
                "This application has no OpenID Connect configuration",
            ))
    }

    /// A new secret; the previous one stops working at once (a leaked secret must die now).
    pub async fn rotate_secret(
        &self,
        manager: &ClientManager,
        application: &str,
    ) -> Result<Configured, OidcClientError> {
        let app = self.own_application(manager, application).await?;
        Self::require_configure(manager)?;
        let mut config = self
            .store
            .find(&app.id)
            .await?
            .ok_or(OidcClientError::NotFound(
                "This application has no OpenID Connect configuration",
            ))?;
        if !config.auth_method.uses_secret() {
            return Err(OidcClientError::Conflict(
                "This client authenticates with private_key_jwt and has no secret",
            ));
        }
        let secret = self.new_secret(&mut config);
        config.updated_at = self.clock.now();
        if !self
            .store
            .set_secret(&app.id, config.secret_hash.as_deref(), config.updated_at)
            .await?
        {
            return Err(OidcClientError::NotFound(
                "This application has no OpenID Connect configuration",
            ));
        }
        Ok(Configured {
            config,
            secret: Some(secret),
        })
    }

    /// The configured client, without authentication: what `/oauth2/authorize` needs.
    /// `None` for an unknown client or one without configuration.
    pub async fn client(
        &self,
        client_id: &str,
    ) -> Result<Option<(ClientConfig, crate::ports::ClientApplication)>, StoreError> {
        let Ok(id) = ApplicationId::parse(client_id) else {
            return Ok(None);
        };
        let Some(config) = self.store.find(&id).await? else {
            return Ok(None);
        };
        Ok(self.applications.find(&id).await?.map(|app| (config, app)))
    }

    /// Authenticates a client by the method it registered: a secret sent the other way, a
    /// rotated-out secret, an unknown client — all `InvalidClient`.
    pub async fn authenticate(
        &self,
        presented: &PresentedCredentials,
    ) -> Result<AuthenticatedClient, ClientAuthError> {
        let (client_id, secret, method) = match presented {
            PresentedCredentials::Basic { client_id, secret } => {
                (client_id, secret, AuthMethod::ClientSecretBasic)
            }
            PresentedCredentials::Post { client_id, secret } => {
                (client_id, secret, AuthMethod::ClientSecretPost)
            }
        };
        let (config, application) = self
            .client(client_id)
            .await?
            .ok_or(ClientAuthError::InvalidClient)?;
        let verified = config.auth_method == method
            && config.secret_hash.as_deref().is_some_and(|stored| {
                secret::matches(self.hasher.as_ref(), &config.application_id, secret, stored)
            });
        if !verified {
            return Err(ClientAuthError::InvalidClient);
        }
        Ok(AuthenticatedClient {
            config,
            application,
        })
    }
}
