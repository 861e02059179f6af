//! The merchant ports on diesel: accounts and documents, teams, one-time codes, applications
//! with their API credentials, the replay guard and idempotency keys.
//!
//! One [`DieselMerchantStore`] implements every port. Changes that touch several rows run in one
//! `Db::write` transaction; rules checked inside a transaction abort it with
//! `DbError::Rollback(tag)`, and [`repository_error`] turns the tag back into the port's error.
//! Where two transactions must not interleave (approval against application creation, owner
//! removals, key rotations), PostgreSQL locks the rows first; SQLite's single writer already
//! runs write transactions one at a time.

use std::sync::Arc;

use diesel::prelude::*;
use idconsent_merchant::ports::RepositoryError;

use crate::db::{AnyConnection, Batcher, Db};
use crate::error::DbError;
use crate::schema::{applications, merchant_users, merchants};

mod accounts;
mod apps;
mod codes;
mod requests;
mod team;

/// Every merchant port (`MerchantRepository`, `TeamRepository`, `CodeRepository`,
/// `ApplicationRepository`, `ReplayGuard`, `IdempotencyStore`) on one database.
#[derive(Debug, Clone)]
pub struct DieselMerchantStore {
    db: Db,
    /// On PostgreSQL, the replay guard's inserts of requests arriving together, one statement
    /// and one commit for them all (ADR 0035).
    fingerprints: Option<Arc<Batcher<requests::Fingerprint, bool>>>,
    /// On PostgreSQL, the API-key lookups of requests arriving together, one statement.
    key_lookups: Option<Arc<Batcher<String, Option<apps::FoundByKey>>>>,
}

impl DieselMerchantStore {
    pub fn new(db: Db) -> Self {
        let fingerprints = db
            .batcher(
                "fingerprints",
                requests::FINGERPRINTS_PER_BATCH,
                Box::new(requests::remember_fingerprints),
            )
            .map(Arc::new);
        let key_lookups = db
            .batcher(
                "key-lookups",
                apps::KEY_LOOKUPS_PER_BATCH,
                Box::new(apps::find_by_key_hashes),
            )
            .map(Arc::new);
        Self {
            db,
            fingerprints,
            key_lookups,
        }
    }
}

/// Rollback tag: the row to change does not exist.
pub(crate) const NOT_FOUND: &str = "not found";

/// The port error for a storage failure: rule tags become `Conflict` (or `NotFound`), unique
/// violations `Duplicate`, a reference to a missing row `NotFound`, anything else `Unavailable`.
fn repository_error(error: DbError) -> RepositoryError {
    match error.rollback_tag() {
        Some(NOT_FOUND) => RepositoryError::NotFound,
        Some(tag) => RepositoryError::Conflict(tag),
        None if error.is_unique_violation() => RepositoryError::Duplicate,
        None if error.is_foreign_key_violation() => RepositoryError::NotFound,
        None => RepositoryError::Unavailable(Box::new(error)),
    }
}

/// A stored value that does not read back (a bad enum, email or URL): the database was
/// changed behind our back.
fn corrupt(what: String) -> RepositoryError {
    RepositoryError::Unavailable(format!("unreadable stored value: {what}").into())
}

/// `Ok` when an update changed a row, else the not-found rollback.
pub(crate) fn found_one(changed: usize) -> Result<(), DbError> {
    if changed == 0 {
        Err(DbError::Rollback(NOT_FOUND))
    } else {
        Ok(())
    }
}

/// How a row is locked on PostgreSQL until the transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    /// Others may read-lock too, nobody may change it.
    Share,
    /// Exclusive.
    Update,
}

/// The merchant's status, with its row locked (PostgreSQL), or `None` for an unknown merchant.
fn lock_merchant(
    conn: &mut AnyConnection<'_>,
    id: &str,
    lock: Lock,
) -> Result<Option<String>, DbError> {
    let query = merchants::table
        .find(id.to_owned())
        .select(merchants::status);
    Ok(match conn {
        AnyConnection::Sqlite(c) => query.first::<String>(&mut **c).optional()?,
        AnyConnection::Postgres(c) => match lock {
            Lock::Share => query.for_share().first::<String>(&mut **c).optional()?,
            Lock::Update => query.for_update().first::<String>(&mut **c).optional()?,
        },
    })
}

/// Whether the application exists, with its row locked (PostgreSQL).
fn lock_application(conn: &mut AnyConnection<'_>, id: &str) -> Result<bool, DbError> {
    let query = applications::table
        .find(id.to_owned())
        .select(applications::id);
    let found = match conn {
        AnyConnection::Sqlite(c) => query.first::<String>(&mut **c).optional()?,
        AnyConnection::Postgres(c) => query.for_update().first::<String>(&mut **c).optional()?,
    };
    Ok(found.is_some())
}

/// The ids of the merchant's active owners, their rows locked (PostgreSQL) in id order so
/// concurrent removals queue instead of deadlocking.
fn lock_active_owners(
    conn: &mut AnyConnection<'_>,
    merchant: &str,
) -> Result<Vec<String>, DbError> {
    use idconsent_merchant::model::{Role, UserStatus};
    let query = merchant_users::table
        .filter(merchant_users::merchant_id.eq(merchant.to_owned()))
        .filter(merchant_users::role.eq(Role::Owner.as_str()))
        .filter(merchant_users::status.eq(UserStatus::Active.as_str()))
        .order(merchant_users::id)
        .select(merchant_users::id);
    Ok(match conn {
        AnyConnection::Sqlite(c) => query.load::<String>(&mut **c)?,
        AnyConnection::Postgres(c) => query.for_update().load::<String>(&mut **c)?,
    })
}

/// Rows to skip and take for a page, in SQL's integer type.
fn page_bounds(page: idconsent_kernel::PageRequest) -> (i64, i64) {
    (
        i64::try_from(page.offset()).unwrap_or(i64::MAX),
        i64::from(page.limit()),
    )
}
