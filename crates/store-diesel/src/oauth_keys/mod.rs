//! The OAuth signing keys (`idconsent_oauth::SigningKeyStore`), shared by every process.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::{Sealed, Timestamp};
use idconsent_oauth::{SigningKeyError, SigningKeyRecord, SigningKeyStore};

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::repo::{advisory_lock, counted, delete_rows, insert_absent, load_rows};

pub mod schema {
    diesel::table! {
        oauth_signing_keys (kid) {
            kid -> Text,
            sealed_key -> Text,
            created_at -> BigInt,
            activates_at -> BigInt,
            retired_at -> Nullable<BigInt>,
        }
    }
}

use schema::oauth_signing_keys;

#[derive(Debug, Clone)]
pub struct DieselSigningKeyStore {
    db: Db,
}

impl DieselSigningKeyStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = oauth_signing_keys)]
struct KeyRow {
    kid: String,
    sealed_key: String,
    created_at: i64,
    activates_at: i64,
    retired_at: Option<i64>,
}

impl KeyRow {
    fn of(key: &SigningKeyRecord) -> Self {
        Self {
            kid: key.kid.clone(),
            sealed_key: key.sealed_key.as_str().to_owned(),
            created_at: key.created_at.as_millis(),
            activates_at: key.activates_at.as_millis(),
            retired_at: key.retired_at.map(Timestamp::as_millis),
        }
    }

    fn into_record(self) -> SigningKeyRecord {
        SigningKeyRecord {
            kid: self.kid,
            sealed_key: Sealed::from_stored(self.sealed_key),
            created_at: Timestamp::from_millis(self.created_at),
            activates_at: Timestamp::from_millis(self.activates_at),
            retired_at: self.retired_at.map(Timestamp::from_millis),
        }
    }
}

const DUPLICATE: &str = "duplicate kid";

fn key_error(error: DbError) -> SigningKeyError {
    if error.rollback_tag() == Some(DUPLICATE) || error.is_unique_violation() {
        SigningKeyError::Duplicate
    } else {
        SigningKeyError::Unavailable(Box::new(error))
    }
}

/// Serialises the key writers of every process on PostgreSQL (SQLite's single writer already
/// does), so "insert the first key if there is none" cannot pass twice.
fn lock_keys(conn: AnyConnection<'_>) -> Result<(), DbError> {
    advisory_lock(conn, "oauth_signing_keys")
}

fn has_kid(conn: AnyConnection<'_>, kid: &str) -> Result<bool, DbError> {
    Ok(crate::with_conn!(conn, |c| oauth_signing_keys::table
        .find(kid)
        .select(oauth_signing_keys::kid)
        .get_result::<String>(c)
        .optional())?
    .is_some())
}

#[async_trait]
impl SigningKeyStore for DieselSigningKeyStore {
    async fn list(&self) -> Result<Vec<SigningKeyRecord>, SigningKeyError> {
        let rows = load_rows!(
            self.db,
            oauth_signing_keys::table
                .order((oauth_signing_keys::created_at, oauth_signing_keys::kid)),
            KeyRow
        )
        .await
        .map_err(key_error)?;
        Ok(rows.into_iter().map(KeyRow::into_record).collect())
    }

    async fn add_first(&self, key: &SigningKeyRecord) -> Result<bool, SigningKeyError> {
        let row = KeyRow::of(key);
        self.db
            .write(move |mut conn| {
                lock_keys(conn.reborrow())?;
                crate::with_conn!(conn, |c| {
                    let unretired: i64 = oauth_signing_keys::table
                        .filter(oauth_signing_keys::retired_at.is_null())
                        .count()
                        .get_result(c)?;
                    if unretired > 0 {
                        return Ok(false);
                    }
                    diesel::insert_into(oauth_signing_keys::table)
                        .values(&row)
                        .execute(c)?;
                    Ok(true)
                })
            })
            .await
            .map_err(key_error)
    }

    async fn rotate(&self, key: &SigningKeyRecord) -> Result<(), SigningKeyError> {
        let row = KeyRow::of(key);
        self.db
            .write(move |mut conn| {
                lock_keys(conn.reborrow())?;
                if has_kid(conn.reborrow(), &row.kid)? {
                    return Err(DbError::Rollback(DUPLICATE));
                }
                crate::with_conn!(conn, |c| {
                    diesel::update(
                        oauth_signing_keys::table.filter(oauth_signing_keys::retired_at.is_null()),
                    )
                    .set(oauth_signing_keys::retired_at.eq(Some(row.activates_at)))
                    .execute(c)?;
                    diesel::insert_into(oauth_signing_keys::table)
                        .values(&row)
                        .execute(c)?;
                    Ok(())
                })
            })
            .await
            .map_err(key_error)
    }

    async fn insert_if_absent(&self, key: &SigningKeyRecord) -> Result<bool, SigningKeyError> {
        insert_absent!(self.db, oauth_signing_keys::table, KeyRow::of(key))
            .await
            .map_err(key_error)
    }

    async fn forget_retired_before(&self, before: Timestamp) -> Result<u64, SigningKeyError> {
        let retired =
            oauth_signing_keys::table.filter(oauth_signing_keys::retired_at.lt(before.as_millis()));
        counted(delete_rows!(self.db, retired), key_error).await
    }
}
