//! `ClientStore` on diesel: one `oidc_clients` row per application.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{ApplicationId, SessionId, TypedId};
use idconsent_oidc::{
    AuthMethod, Authorization, AuthorizationStore, ClientConfig, ClientStore, DeliveryMode,
    Profile, RefreshStore, RefreshToken, RefreshUse, StoreError,
};

use crate::db::Db;
use crate::error::DbError;
use crate::repo::{duplicate_or, find_row, found, insert_row, unreadable, update_rows};

pub mod schema {
    diesel::table! {
        oidc_clients (application_id) {
            application_id -> Text,
            redirect_uris -> Text,
            post_logout_redirect_uris -> Text,
            token_endpoint_auth_method -> Text,
            jwks -> Nullable<Text>,
            jwks_uri -> Nullable<Text>,
            backchannel_delivery_mode -> Text,
            backchannel_notification_uri -> Nullable<Text>,
            require_pushed_requests -> Bool,
            dpop_bound_tokens -> Bool,
            profile -> Text,
            secret_hash -> Nullable<Text>,
            created_at -> BigInt,
            updated_at -> BigInt,
        }
    }

    diesel::table! {
        oidc_refresh_tokens (token_hash) {
            token_hash -> Text,
            family -> Text,
            application_id -> Text,
            root_token_id -> Text,
            issued_at -> BigInt,
            expires_at -> BigInt,
            used_at -> Nullable<BigInt>,
            revoked_at -> Nullable<BigInt>,
        }
    }

    diesel::table! {
        oidc_authorizations (session_id) {
            session_id -> Text,
            application_id -> Text,
            nonce -> Nullable<Text>,
            backchannel -> Bool,
            last_polled_at -> Nullable<BigInt>,
            created_at -> BigInt,
        }
    }
}

use schema::oidc_authorizations as authorizations;
use schema::oidc_clients as rows;
use schema::oidc_refresh_tokens as refresh;

#[derive(Debug, Clone)]
pub struct DieselOidcClientStore {
    db: Db,
}

impl DieselOidcClientStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = rows)]
#[diesel(treat_none_as_null = true)]
struct ClientRow {
    application_id: String,
    redirect_uris: String,
    post_logout_redirect_uris: String,
    token_endpoint_auth_method: String,
    jwks: Option<String>,
    jwks_uri: Option<String>,
    backchannel_delivery_mode: String,
    backchannel_notification_uri: Option<String>,
    require_pushed_requests: bool,
    dpop_bound_tokens: bool,
    profile: String,
    secret_hash: Option<String>,
    created_at: i64,
    updated_at: i64,
}

/// The settings an update writes: everything but the key, the secret and the creation time.
#[derive(Debug, AsChangeset)]
#[diesel(table_name = rows)]
#[diesel(treat_none_as_null = true)]
struct SettingsChange {
    redirect_uris: String,
    post_logout_redirect_uris: String,
    token_endpoint_auth_method: String,
    jwks: Option<String>,
    jwks_uri: Option<String>,
    backchannel_delivery_mode: String,
    backchannel_notification_uri: Option<String>,
    require_pushed_requests: bool,
    dpop_bound_tokens: bool,
    profile: String,
    updated_at: i64,
}

fn json_text<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|error| StoreError::Unavailable(Box::new(error)))
}

impl ClientRow {
    fn from_config(config: &ClientConfig) -> Result<Self, StoreError> {
        Ok(Self {
            application_id: config.application_id.as_str().to_owned(),
            redirect_uris: json_text(&config.redirect_uris)?,
            post_logout_redirect_uris: json_text(&config.post_logout_redirect_uris)?,
            token_endpoint_auth_method: config.auth_method.as_str().to_owned(),
            jwks: config.jwks.as_ref().map(json_text).transpose()?,
            jwks_uri: config.jwks_uri.clone(),
            backchannel_delivery_mode: config.delivery_mode.as_str().to_owned(),
            backchannel_notification_uri: config.notification_endpoint.clone(),
            require_pushed_requests: config.require_par,
            dpop_bound_tokens: config.dpop_bound,
            profile: config.profile.as_str().to_owned(),
            secret_hash: config.secret_hash.clone(),
            created_at: config.created_at.as_millis(),
            updated_at: config.updated_at.as_millis(),
        })
    }

    fn into_settings(self) -> SettingsChange {
        SettingsChange {
            redirect_uris: self.redirect_uris,
            post_logout_redirect_uris: self.post_logout_redirect_uris,
            token_endpoint_auth_method: self.token_endpoint_auth_method,
            jwks: self.jwks,
            jwks_uri: self.jwks_uri,
            backchannel_delivery_mode: self.backchannel_delivery_mode,
            backchannel_notification_uri: self.backchannel_notification_uri,
            require_pushed_requests: self.require_pushed_requests,
            dpop_bound_tokens: self.dpop_bound_tokens,
            profile: self.profile,
            updated_at: self.updated_at,
        }
    }

    fn into_config(self) -> Result<ClientConfig, StoreError> {
        let id = self.application_id.clone();
        let corrupt =
            |column: &str| StoreError::Unavailable(unreadable("oidc_clients", column, &id));
        let strings = |column: &str, text: &str| -> Result<Vec<String>, StoreError> {
            serde_json::from_str(text).map_err(|_| corrupt(column))
        };
        Ok(ClientConfig {
            redirect_uris: strings("redirect_uris", &self.redirect_uris)?,
            post_logout_redirect_uris: strings(
                "post_logout_redirect_uris",
                &self.post_logout_redirect_uris,
            )?,
            auth_method: AuthMethod::parse(&self.token_endpoint_auth_method)
                .ok_or_else(|| corrupt("token_endpoint_auth_method"))?,
            jwks: self
                .jwks
                .as_deref()
                .map(|text| serde_json::from_str(text).map_err(|_| corrupt("jwks")))
                .transpose()?,
            delivery_mode: DeliveryMode::parse(&self.backchannel_delivery_mode)
                .ok_or_else(|| corrupt("backchannel_delivery_mode"))?,
            profile: Profile::parse(&self.profile).ok_or_else(|| corrupt("profile"))?,
            application_id: ApplicationId::from_trusted(self.application_id),
            jwks_uri: self.jwks_uri,
            notification_endpoint: self.backchannel_notification_uri,
            require_par: self.require_pushed_requests,
            dpop_bound: self.dpop_bound_tokens,
            secret_hash: self.secret_hash,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

#[async_trait]
impl ClientStore for DieselOidcClientStore {
    async fn insert(&self, config: &ClientConfig) -> Result<(), StoreError> {
        insert_row!(self.db, rows::table, ClientRow::from_config(config)?)
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn update(&self, config: &ClientConfig) -> Result<bool, StoreError> {
        let key = config.application_id.as_str().to_owned();
        let change = ClientRow::from_config(config)?.into_settings();
        let changed = update_rows!(self.db, rows::table.find(&key), &change)
            .await
            .map_err(unavailable)?;
        Ok(changed > 0)
    }

    async fn set_secret(
        &self,
        application: &ApplicationId,
        secret_hash: Option<&str>,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let key = application.as_str().to_owned();
        let hash = secret_hash.map(str::to_owned);
        let changed = update_rows!(
            self.db,
            rows::table.find(&key),
            (
                rows::secret_hash.eq(&hash),
                rows::updated_at.eq(at.as_millis())
            )
        )
        .await
        .map_err(unavailable)?;
        Ok(changed > 0)
    }

    async fn find(&self, application: &ApplicationId) -> Result<Option<ClientConfig>, StoreError> {
        let row = find_row!(
            self.db,
            rows::table,
            application.as_str().to_owned(),
            ClientRow
        );
        found(row, unavailable, ClientRow::into_config).await
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = authorizations)]
struct AuthorizationRow {
    session_id: String,
    application_id: String,
    nonce: Option<String>,
    backchannel: bool,
    last_polled_at: Option<i64>,
    created_at: i64,
}

#[async_trait]
impl AuthorizationStore for DieselOidcClientStore {
    async fn insert(&self, authorization: &Authorization) -> Result<(), StoreError> {
        let row = AuthorizationRow {
            session_id: authorization.session_id.as_str().to_owned(),
            application_id: authorization.application_id.as_str().to_owned(),
            nonce: authorization.nonce.clone(),
            backchannel: authorization.backchannel,
            last_polled_at: authorization.last_polled_at.map(Timestamp::as_millis),
            created_at: authorization.created_at.as_millis(),
        };
        insert_row!(self.db, authorizations::table, row)
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn find(&self, session: &SessionId) -> Result<Option<Authorization>, StoreError> {
        let row = find_row!(
            self.db,
            authorizations::table,
            session.as_str().to_owned(),
            AuthorizationRow
        );
        found(row, unavailable, |row| {
            Ok(Authorization {
                session_id: SessionId::from_trusted(row.session_id),
                application_id: ApplicationId::from_trusted(row.application_id),
                nonce: row.nonce,
                backchannel: row.backchannel,
                last_polled_at: row.last_polled_at.map(Timestamp::from_millis),
                created_at: Timestamp::from_millis(row.created_at),
            })
        })
        .await
    }

    async fn poll(
        &self,
        session: &SessionId,
        at: Timestamp,
        interval: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let key = session.as_str().to_owned();
        let at = at.as_millis();
        let earliest_previous = at - i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
        let changed = update_rows!(
            self.db,
            authorizations::table.find(&key).filter(
                authorizations::last_polled_at
                    .is_null()
                    .or(authorizations::last_polled_at.le(earliest_previous))
            ),
            authorizations::last_polled_at.eq(Some(at))
        )
        .await
        .map_err(unavailable)?;
        Ok(changed > 0)
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = refresh)]
struct RefreshRow {
    token_hash: String,
    family: String,
    application_id: String,
    root_token_id: String,
    issued_at: i64,
    expires_at: i64,
    used_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl RefreshRow {
    fn from_token(token: &RefreshToken) -> Self {
        Self {
            token_hash: token.hash.clone(),
            family: token.family.clone(),
            application_id: token.application_id.as_str().to_owned(),
            root_token_id: token.root_token_id.clone(),
            issued_at: token.issued_at.as_millis(),
            expires_at: token.expires_at.as_millis(),
            used_at: token.used_at.map(Timestamp::as_millis),
            revoked_at: token.revoked_at.map(Timestamp::as_millis),
        }
    }

    fn into_token(self) -> RefreshToken {
        RefreshToken {
            hash: self.token_hash,
            family: self.family,
            application_id: ApplicationId::from_trusted(self.application_id),
            root_token_id: self.root_token_id,
            issued_at: Timestamp::from_millis(self.issued_at),
            expires_at: Timestamp::from_millis(self.expires_at),
            used_at: self.used_at.map(Timestamp::from_millis),
            revoked_at: self.revoked_at.map(Timestamp::from_millis),
        }
    }
}

/// How a use of one refresh token ended, inside its transaction.
enum Used {
    Fresh(RefreshRow),
    Replayed,
    Unknown,
}

#[async_trait]
impl RefreshStore for DieselOidcClientStore {
    async fn insert_refresh(&self, token: &RefreshToken) -> Result<(), StoreError> {
        insert_row!(self.db, refresh::table, RefreshRow::from_token(token))
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn use_refresh(
        &self,
        hash: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<RefreshUse, StoreError> {
        let hash = hash.to_owned();
        let application = application.as_str().to_owned();
        let at = at.as_millis();
        let used = self
            .db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| {
                    let found: Option<RefreshRow> = refresh::table
                        .find(&hash)
                        .filter(refresh::application_id.eq(&application))
                        .select(RefreshRow::as_select())
                        .get_result(c)
                        .optional()?;
                    let Some(row) = found else {
                        return Ok(Used::Unknown);
                    };
                    // The compare-and-set: of concurrent uses, one finds it unused.
                    let claimed = diesel::update(
                        refresh::table
                            .find(&hash)
                            .filter(refresh::used_at.is_null())
                            .filter(refresh::revoked_at.is_null()),
                    )
                    .set(refresh::used_at.eq(Some(at)))
                    .execute(c)?;
                    if claimed == 1 {
                        return Ok(Used::Fresh(row));
                    }
                    diesel::update(
                        refresh::table
                            .filter(refresh::family.eq(&row.family))
                            .filter(refresh::application_id.eq(&application))
                            .filter(refresh::revoked_at.is_null()),
                    )
                    .set(refresh::revoked_at.eq(Some(at)))
                    .execute(c)?;
                    Ok::<_, diesel::result::Error>(Used::Replayed)
                })?)
            })
            .await
            .map_err(unavailable)?;
        Ok(match used {
            Used::Fresh(row) => RefreshUse::Fresh(row.into_token()),
            Used::Replayed => RefreshUse::Replayed,
            Used::Unknown => RefreshUse::Unknown,
        })
    }

    async fn revoke_family(
        &self,
        family: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let family = family.to_owned();
        let application = application.as_str().to_owned();
        let changed = update_rows!(
            self.db,
            refresh::table
                .filter(refresh::family.eq(&family))
                .filter(refresh::application_id.eq(&application))
                .filter(refresh::revoked_at.is_null()),
            refresh::revoked_at.eq(Some(at.as_millis()))
        )
        .await
        .map_err(unavailable)?;
        Ok(changed > 0)
    }

    async fn find_refresh(&self, hash: &str) -> Result<Option<RefreshToken>, StoreError> {
        let row = find_row!(self.db, refresh::table, hash.to_owned(), RefreshRow);
        found(row, unavailable, |row| Ok(row.into_token())).await
    }
}
