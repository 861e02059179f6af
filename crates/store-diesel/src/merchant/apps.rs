//! `ApplicationRepository`: applications and their API credentials.
//!
//! Every key ever issued is a row of `api_credentials`; the current key of an environment is
//! the one not revoked (a partial unique index keeps it single). Sealed secrets are stored as
//! the vault's text; redirect URIs and request types as JSON arrays of strings.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use async_trait::async_trait;
use diesel::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{Array, Text};
use idconsent_kernel::id::{ApplicationId, ClientId, MerchantId, TypedId};
use idconsent_kernel::{Environment, Intent, Page, PageRequest, Sealed, Timestamp, WebUrl};
use idconsent_merchant::model::{
    Application, KeyRecord, MerchantStatus, RequestTypes, RetiringSecret,
};
use idconsent_merchant::ports::{ApplicationRepository, NewKey, RepositoryError, conflicts};

use super::accounts::NewCredentialRow;
use super::{
    DieselMerchantStore, Lock, NOT_FOUND, corrupt, lock_application, lock_merchant, page_bounds,
    repository_error,
};
use crate::cached::CacheStatement;
use crate::db::AnyConnection;
use crate::error::DbError;
use crate::repo::{page_of, read_with, update_one};
use crate::schema::{api_credentials, applications};

#[derive(Debug, Clone, Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = applications)]
pub(super) struct ApplicationRow {
    id: String,
    merchant_id: String,
    client_id: String,
    name: String,
    callback_url: String,
    redirect_uris: String,
    request_types: String,
    secret: String,
    previous_secret: Option<String>,
    previous_secret_expires_at: Option<i64>,
    webhook_secret: String,
    previous_webhook_secret: Option<String>,
    previous_webhook_secret_expires_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
}

/// The current key of one environment of an application.
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = api_credentials)]
pub(super) struct CurrentKeyRow {
    application_id: String,
    environment: String,
    key_sealed: String,
    generated_at: i64,
}

/// The columns `update` saves.
#[derive(Debug, AsChangeset)]
#[diesel(table_name = applications)]
struct ApplicationChange {
    name: String,
    callback_url: String,
    redirect_uris: String,
    request_types: String,
    updated_at: i64,
}

fn json_strings<'a>(items: impl Iterator<Item = &'a str>) -> Result<String, RepositoryError> {
    serde_json::to_string(&items.collect::<Vec<_>>())
        .map_err(|error| RepositoryError::Unavailable(Box::new(error)))
}

/// A retiring secret from its two columns: both set, or both empty.
fn retiring(sealed: Option<String>, expires_at: Option<i64>) -> Result<Option<RetiringSecret>, ()> {
    match (sealed, expires_at) {
        (Some(sealed), Some(expires_at)) => Ok(Some(RetiringSecret {
            sealed: Sealed::from_stored(sealed),
            expires_at: Timestamp::from_millis(expires_at),
        })),
        (None, None) => Ok(None),
        _ => Err(()),
    }
}

impl ApplicationRow {
    fn from_application(application: &Application) -> Result<Self, RepositoryError> {
        let change = ApplicationChange::from_application(application)?;
        let previous = application.previous_webhook_secret.as_ref();
        let previous_secret = application.previous_secret.as_ref();
        Ok(Self {
            id: application.id.as_str().to_owned(),
            merchant_id: application.merchant_id.as_str().to_owned(),
            client_id: application.client_id.as_str().to_owned(),
            name: change.name,
            callback_url: change.callback_url,
            redirect_uris: change.redirect_uris,
            request_types: change.request_types,
            secret: application.secret.as_str().to_owned(),
            previous_secret: previous_secret.map(|p| p.sealed.as_str().to_owned()),
            previous_secret_expires_at: previous_secret.map(|p| p.expires_at.as_millis()),
            webhook_secret: application.webhook_secret.as_str().to_owned(),
            previous_webhook_secret: previous.map(|p| p.sealed.as_str().to_owned()),
            previous_webhook_secret_expires_at: previous.map(|p| p.expires_at.as_millis()),
            created_at: application.created_at.as_millis(),
            updated_at: application.updated_at.as_millis(),
        })
    }

    /// The application with its current keys (`keys` may hold other applications' too).
    fn into_application(self, keys: &[CurrentKeyRow]) -> Result<Application, RepositoryError> {
        let corrupt = |what: &str| corrupt(format!("applications.{what} of {}", self.id));
        let mut sandbox_key = None;
        let mut live_key = None;
        for key in keys.iter().filter(|k| k.application_id == self.id) {
            let record = KeyRecord {
                sealed: Sealed::from_stored(key.key_sealed.clone()),
                generated_at: Timestamp::from_millis(key.generated_at),
            };
            match Environment::parse(&key.environment) {
                Some(Environment::Sandbox) => sandbox_key = Some(record),
                Some(Environment::Live) => live_key = Some(record),
                None => return Err(corrupt("api_credentials.environment")),
            }
        }
        let strings = |what: &str, text: &str| {
            serde_json::from_str::<Vec<String>>(text).map_err(|_| corrupt(what))
        };
        let redirect_uris = strings("redirect_uris", &self.redirect_uris)?
            .iter()
            .map(|uri| WebUrl::parse(uri).map_err(|_| corrupt("redirect_uris")))
            .collect::<Result<Vec<_>, _>>()?;
        let intents = strings("request_types", &self.request_types)?
            .iter()
            .map(|intent| Intent::parse(intent).ok_or_else(|| corrupt("request_types")))
            .collect::<Result<Vec<_>, _>>()?;
        let previous_webhook_secret = retiring(
            self.previous_webhook_secret,
            self.previous_webhook_secret_expires_at,
        )
        .map_err(|()| corrupt("previous_webhook_secret"))?;
        let previous_secret = retiring(self.previous_secret, self.previous_secret_expires_at)
            .map_err(|()| corrupt("previous_secret"))?;
        Ok(Application {
            sandbox_key: sandbox_key.ok_or_else(|| corrupt("current sandbox key"))?,
            live_key,
            callback_url: WebUrl::parse(&self.callback_url).map_err(|_| corrupt("callback_url"))?,
            redirect_uris,
            request_types: RequestTypes::new(intents).ok_or_else(|| corrupt("request_types"))?,
            previous_webhook_secret,
            previous_secret,
            id: ApplicationId::from_trusted(self.id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            client_id: ClientId::from_trusted(self.client_id),
            name: self.name,
            secret: Sealed::from_stored(self.secret),
            webhook_secret: Sealed::from_stored(self.webhook_secret),
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

impl ApplicationChange {
    fn from_application(application: &Application) -> Result<Self, RepositoryError> {
        Ok(Self {
            name: application.name.clone(),
            callback_url: application.callback_url.as_str().to_owned(),
            redirect_uris: json_strings(application.redirect_uris.iter().map(WebUrl::as_str))?,
            request_types: json_strings(application.request_types.iter().map(Intent::as_str))?,
            updated_at: application.updated_at.as_millis(),
        })
    }
}

/// The current keys of these applications.
macro_rules! current_keys {
    ($c:ident, $applications:expr) => {
        api_credentials::table
            .filter(api_credentials::application_id.eq_any($applications))
            .filter(api_credentials::revoked_at.is_null())
            .select(CurrentKeyRow::as_select())
            .load::<CurrentKeyRow>($c)
    };
}

#[async_trait]
impl ApplicationRepository for DieselMerchantStore {
    async fn create(
        &self,
        application: &Application,
        sandbox_key_hash: &str,
        live_key_hash: Option<&str>,
    ) -> Result<(), RepositoryError> {
        let row = ApplicationRow::from_application(application)?;
        let key = |environment, record: &KeyRecord, hash: &str| {
            NewCredentialRow::from_key(
                application.id.as_str(),
                &NewKey {
                    environment,
                    hash: hash.to_owned(),
                    sealed: record.sealed.clone(),
                    generated_at: record.generated_at,
                },
            )
        };
        let mut keys = vec![key(
            Environment::Sandbox,
            &application.sandbox_key,
            sandbox_key_hash,
        )];
        match (&application.live_key, live_key_hash) {
            (Some(record), Some(hash)) => keys.push(key(Environment::Live, record, hash)),
            (None, None) => {}
            _ => {
                return Err(RepositoryError::Unavailable(
                    "an application's live key record and live key hash come together".into(),
                ));
            }
        }
        let live = application.live_key.is_some();
        self.db
            .write(move |mut conn| {
                // Read-locked until commit, so `approve` (which write-locks it) runs wholly
                // before or after this.
                let status = lock_merchant(&mut conn, &row.merchant_id, Lock::Share)?
                    .ok_or(DbError::Rollback(NOT_FOUND))?;
                if (status == MerchantStatus::Live.as_str()) != live {
                    return Err(DbError::Rollback(conflicts::WRONG_STATUS));
                }
                with_conn!(conn.reborrow(), |c| {
                    diesel::insert_into(applications::table)
                        .values(&row)
                        .execute(c)?;
                    diesel::insert_into(api_credentials::table)
                        .values(&keys)
                        .execute(c)?;
                });
                Ok(())
            })
            .await
            .map_err(repository_error)
    }

    async fn find(&self, id: &ApplicationId) -> Result<Option<Application>, RepositoryError> {
        let id = id.as_str().to_owned();
        let found = read_with!(self.db, |c| {
            let row = applications::table
                .find(&id)
                .select(ApplicationRow::as_select())
                .get_result(c)
                .optional()?;
            Ok::<_, DbError>(match row {
                Some(row) => Some((row, current_keys!(c, [&id])?)),
                None => None,
            })
        })
        .await
        .map_err(repository_error)?;
        found
            .map(|(row, keys)| row.into_application(&keys))
            .transpose()
    }

    async fn list(
        &self,
        merchant: &MerchantId,
        page: PageRequest,
    ) -> Result<Page<Application>, RepositoryError> {
        let merchant = merchant.as_str().to_owned();
        let (offset, limit) = page_bounds(page);
        let (rows, keys, count) = read_with!(self.db, |c| c.transaction(|c| {
            let mine = applications::table.filter(applications::merchant_id.eq(&merchant));
            let count: i64 = mine.count().get_result(c)?;
            let rows = mine
                .order((applications::created_at, applications::id))
                .offset(offset)
                .limit(limit)
                .select(ApplicationRow::as_select())
                .load(c)?;
            let ids: Vec<&str> = rows
                .iter()
                .map(|r: &ApplicationRow| r.id.as_str())
                .collect();
            let keys = current_keys!(c, ids)?;
            Ok::<_, DbError>((rows, keys, count))
        }))
        .await
        .map_err(repository_error)?;
        page_of((rows, count), page, |row| row.into_application(&keys))
    }

    async fn update(&self, application: &Application) -> Result<(), RepositoryError> {
        let id = application.id.as_str().to_owned();
        let change = ApplicationChange::from_application(application)?;
        update_one!(self.db, applications::table.find(id), &change)
            .await
            .map_err(repository_error)
    }

    async fn rotate_key(&self, id: &ApplicationId, key: &NewKey) -> Result<(), RepositoryError> {
        let row = NewCredentialRow::from_key(id.as_str(), key);
        let environment = key.environment;
        let at = key.generated_at.as_millis();
        self.db
            .write(move |mut conn| {
                // Locked so two rotations of one application queue: the second replaces the
                // first one's key instead of finding none.
                if !lock_application(&mut conn, &row.application_id)? {
                    return Err(DbError::Rollback(NOT_FOUND));
                }
                with_conn!(conn.reborrow(), |c| {
                    let revoked = diesel::update(
                        api_credentials::table
                            .filter(api_credentials::application_id.eq(&row.application_id))
                            .filter(api_credentials::environment.eq(environment.as_str()))
                            .filter(api_credentials::revoked_at.is_null()),
                    )
                    .set(api_credentials::revoked_at.eq(Some(at)))
                    .execute(c)?;
                    if revoked == 0 && environment == Environment::Live {
                        return Err(DbError::Rollback(conflicts::NO_LIVE_CREDENTIALS));
                    }
                    diesel::insert_into(api_credentials::table)
                        .values(&row)
                        .execute(c)?;
                    Ok(())
                })
            })
            .await
            .map_err(repository_error)
    }

    async fn rotate_webhook_secret(
        &self,
        id: &ApplicationId,
        new: &Sealed,
        previous_expires_at: Timestamp,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let new = new.as_str().to_owned();
        // Right-hand sides read the row as it was: the current secret becomes the previous one.
        let change = (
            applications::previous_webhook_secret.eq(applications::webhook_secret.nullable()),
            applications::previous_webhook_secret_expires_at
                .eq(Some(previous_expires_at.as_millis())),
            applications::webhook_secret.eq(new),
            applications::updated_at.eq(at.as_millis()),
        );
        update_one!(self.db, applications::table.find(id), change)
            .await
            .map_err(repository_error)
    }

    async fn rotate_secret(
        &self,
        id: &ApplicationId,
        new: &Sealed,
        previous_expires_at: Timestamp,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let new = new.as_str().to_owned();
        // Right-hand sides read the row as it was: the current secret becomes the previous one.
        let change = (
            applications::previous_secret.eq(applications::secret.nullable()),
            applications::previous_secret_expires_at.eq(Some(previous_expires_at.as_millis())),
            applications::secret.eq(new),
            applications::updated_at.eq(at.as_millis()),
        );
        update_one!(self.db, applications::table.find(id), change)
            .await
            .map_err(repository_error)
    }

    async fn find_by_key_hash(
        &self,
        hash: &str,
    ) -> Result<Option<(Application, Environment)>, RepositoryError> {
        let hash = hash.to_owned();
        let found = if let Some(batch) = &self.key_lookups {
            batch.call(hash).await
        } else {
            self.db
                .read(move |conn| match conn {
                    // One round trip: the batch's statement for one key.
                    AnyConnection::Postgres(c) => {
                        Ok(find_by_key_hashes(c, vec![hash])?.pop().flatten())
                    }
                    // Two indexed queries, each prepared once (no round trips on SQLite).
                    AnyConnection::Sqlite(c) => {
                        let found = api_credentials::table
                            .inner_join(applications::table)
                            .filter(api_credentials::key_hash.eq(&hash))
                            .filter(api_credentials::revoked_at.is_null())
                            .select((ApplicationRow::as_select(), api_credentials::environment))
                            .get_result::<(ApplicationRow, String)>(c)
                            .optional()?;
                        Ok::<_, DbError>(match found {
                            Some((row, environment)) => {
                                // `=` rather than `IN`: a statement SQLite can cache.
                                let keys = api_credentials::table
                                    .filter(api_credentials::application_id.eq(&row.id))
                                    .filter(api_credentials::revoked_at.is_null())
                                    .select(CurrentKeyRow::as_select())
                                    .load::<CurrentKeyRow>(c)?;
                                Some((row, environment, keys))
                            }
                            None => None,
                        })
                    }
                })
                .await
        }
        .map_err(repository_error)?;
        let Some((row, environment, keys)) = found else {
            return Ok(None);
        };
        let environment = Environment::parse(&environment).ok_or_else(|| {
            corrupt(format!(
                "api_credentials.environment of application {}",
                row.id
            ))
        })?;
        Ok(Some((row.into_application(&keys)?, environment)))
    }
}

/// What a key lookup finds: the application, the environment of the key, its current keys.
pub(super) type FoundByKey = (ApplicationRow, String, Vec<CurrentKeyRow>);

/// API keys looked up together at most: one statement with one array.
pub(super) const KEY_LOOKUPS_PER_BATCH: usize = 128;

/// The key lookups of a batch on PostgreSQL (ADR 0035), in one statement: each distinct hash is
/// looked up once — the requests arriving together mostly carry the same few keys — and every
/// call gets its own answer, in order. A key revoked before the statement runs is not found.
pub(super) fn find_by_key_hashes(
    c: &mut PgConnection,
    hashes: Vec<String>,
) -> Result<Vec<Option<FoundByKey>>, DbError> {
    let mut distinct: Vec<&str> = hashes.iter().map(String::as_str).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let rows: Vec<HashedKeyedApplicationRow> = diesel::sql_query(FIND_BY_KEY_HASHES)
        .bind::<Array<Text>, _>(distinct)
        .cached()
        .load(c)?;
    let mut found: HashMap<String, FoundByKey> = HashMap::new();
    for HashedKeyedApplicationRow { used_hash, keyed } in rows {
        match found.entry(used_hash) {
            Entry::Vacant(entry) => {
                entry.insert((keyed.application, keyed.key_environment, vec![keyed.key]));
            }
            Entry::Occupied(mut entry) => entry.get_mut().2.push(keyed.key),
        }
    }
    Ok(hashes.iter().map(|hash| found.get(hash).cloned()).collect())
}

/// A [`KeyedApplicationRow`] of a batch, with the key hash it was found by.
#[derive(QueryableByName)]
struct HashedKeyedApplicationRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    used_hash: String,
    #[diesel(embed)]
    keyed: KeyedApplicationRow,
}

/// The application behind a current key, with the environment of that key, once per current
/// key of the application (at most one per environment).
#[derive(QueryableByName)]
struct KeyedApplicationRow {
    #[diesel(embed)]
    application: ApplicationRow,
    #[diesel(sql_type = diesel::sql_types::Text)]
    key_environment: String,
    #[diesel(embed)]
    key: CurrentKeyRow,
}

/// PostgreSQL's [`HashedKeyedApplicationRow`]s of the array of key hashes `$1`; raw SQL so
/// that its prepared statement is kept (diesel would plan a self-join of `api_credentials`
/// afresh each time).
const FIND_BY_KEY_HASHES: &str = "SELECT used.key_hash AS used_hash, a.id, a.merchant_id, \
    a.client_id, a.name, a.callback_url, a.redirect_uris, a.request_types, a.secret, \
    a.previous_secret, a.previous_secret_expires_at, a.webhook_secret, \
    a.previous_webhook_secret, a.previous_webhook_secret_expires_at, a.created_at, \
    a.updated_at, used.environment AS key_environment, current.application_id, \
    current.environment, current.key_sealed, current.generated_at \
    FROM api_credentials used \
    JOIN applications a ON a.id = used.application_id \
    JOIN api_credentials current ON current.application_id = a.id AND current.revoked_at IS NULL \
    WHERE used.key_hash = ANY($1) AND used.revoked_at IS NULL";
