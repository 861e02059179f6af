//! `ReplayGuard` and `IdempotencyStore`: what signed requests remember across processes.

use std::collections::HashSet;

use async_trait::async_trait;
use diesel::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text};
use idconsent_access::ports::{IdempotencyState, IdempotencyStore, ReplayGuard, StoredResponse};
use idconsent_kernel::Timestamp;
use idconsent_merchant::ports::RepositoryError;

use super::{DieselMerchantStore, corrupt, repository_error};
use crate::cached::CacheStatement;
use crate::error::DbError;
use crate::repo::{counted, delete_rows, insert_absent, update_one};
use crate::schema::{idempotency_keys, request_fingerprints};

#[async_trait]
impl ReplayGuard for DieselMerchantStore {
    async fn first_use(
        &self,
        fingerprint: &str,
        expires_at: Timestamp,
    ) -> Result<bool, RepositoryError> {
        if let Some(batch) = &self.fingerprints {
            return batch
                .call(Fingerprint {
                    fingerprint: fingerprint.to_owned(),
                    expires_at: expires_at.as_millis(),
                })
                .await
                .map_err(repository_error);
        }
        let row = (
            request_fingerprints::fingerprint.eq(fingerprint.to_owned()),
            request_fingerprints::expires_at.eq(expires_at.as_millis()),
        );
        // The primary key decides: of two racing inserts exactly one adds the row.
        insert_absent!(self.db, request_fingerprints::table, row)
            .await
            .map_err(repository_error)
    }

    async fn forget_expired(&self, now: Timestamp) -> Result<u64, RepositoryError> {
        let expired = request_fingerprints::table
            .filter(request_fingerprints::expires_at.lt(now.as_millis()));
        counted(delete_rows!(self.db, expired), repository_error).await
    }
}

/// A request's fingerprint waiting for the replay guard's next batch.
pub(super) struct Fingerprint {
    fingerprint: String,
    expires_at: i64,
}

/// Fingerprints written together at most: a batch is one statement with two arrays.
pub(super) const FINGERPRINTS_PER_BATCH: usize = 256;

#[derive(QueryableByName)]
struct Remembered {
    #[diesel(sql_type = Text)]
    fingerprint: String,
}

/// The replay guard's batch on PostgreSQL: inserts the fingerprints absent from the table in
/// one statement and answers, for each call in order, whether it was the first use. Of equal
/// fingerprints in one batch (a replay racing its original) only the first is.
pub(super) fn remember_fingerprints(
    c: &mut PgConnection,
    batch: Vec<Fingerprint>,
) -> Result<Vec<bool>, DbError> {
    let inserted: Vec<Remembered> = diesel::sql_query(
        "INSERT INTO request_fingerprints (fingerprint, expires_at) \
         SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING \
         RETURNING fingerprint",
    )
    .bind::<Array<Text>, _>(
        batch
            .iter()
            .map(|f| f.fingerprint.as_str())
            .collect::<Vec<_>>(),
    )
    .bind::<Array<BigInt>, _>(batch.iter().map(|f| f.expires_at).collect::<Vec<_>>())
    .cached()
    .load(c)?;
    let mut first_uses: HashSet<String> = inserted.into_iter().map(|r| r.fingerprint).collect();
    Ok(batch
        .iter()
        .map(|f| first_uses.remove(&f.fingerprint))
        .collect())
}

const IN_PROGRESS: &str = "in_progress";
const COMPLETED: &str = "completed";

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = idempotency_keys)]
struct KeyRow {
    scope: String,
    key: String,
    request_hash: String,
    state: String,
    response_status: Option<i32>,
    response_body: Option<Vec<u8>>,
}

impl KeyRow {
    fn into_state(self) -> Result<IdempotencyState, RepositoryError> {
        let corrupt = |what: &str| {
            corrupt(format!(
                "idempotency_keys.{what} of {}/{}",
                self.scope, self.key
            ))
        };
        match self.state.as_str() {
            IN_PROGRESS => Ok(IdempotencyState::InProgress {
                request_hash: self.request_hash,
            }),
            COMPLETED => {
                let status = self
                    .response_status
                    .and_then(|status| u16::try_from(status).ok())
                    .ok_or_else(|| corrupt("response_status"))?;
                Ok(IdempotencyState::Completed {
                    response: StoredResponse {
                        status,
                        body: self.response_body.unwrap_or_default(),
                    },
                    request_hash: self.request_hash,
                })
            }
            _ => Err(corrupt("state")),
        }
    }
}

/// How a claim ended inside its transaction.
enum Claim {
    Claimed,
    Found(KeyRow),
    /// The key appeared and disappeared under us every time we looked.
    Churned,
}

#[async_trait]
impl IdempotencyStore for DieselMerchantStore {
    async fn claim(
        &self,
        scope: &str,
        key: &str,
        request_hash: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<IdempotencyState, RepositoryError> {
        let scope = scope.to_owned();
        let key = key.to_owned();
        let request_hash = request_hash.to_owned();
        let claim = self
            .db
            .write(move |conn| {
                let fresh = (
                    idempotency_keys::request_hash.eq(&request_hash),
                    idempotency_keys::state.eq(IN_PROGRESS),
                    idempotency_keys::response_status.eq(None::<i32>),
                    idempotency_keys::response_body.eq(None::<Vec<u8>>),
                    idempotency_keys::created_at.eq(now.as_millis()),
                    idempotency_keys::expires_at.eq(expires_at.as_millis()),
                );
                with_conn!(conn, |c| {
                    // A release between our steps can make the row vanish; look again then.
                    for _ in 0..3 {
                        // New key: the primary key lets exactly one of racing claims insert.
                        let inserted = diesel::insert_into(idempotency_keys::table)
                            .values((
                                idempotency_keys::scope.eq(&scope),
                                idempotency_keys::key.eq(&key),
                                fresh.clone(),
                            ))
                            .on_conflict_do_nothing()
                            .execute(c)?;
                        if inserted == 1 {
                            return Ok(Claim::Claimed);
                        }
                        // Expired key: the conditional update lets exactly one reclaim it.
                        let reclaimed = diesel::update(
                            idempotency_keys::table
                                .find((&scope, &key))
                                .filter(idempotency_keys::expires_at.le(now.as_millis())),
                        )
                        .set(fresh.clone())
                        .execute(c)?;
                        if reclaimed == 1 {
                            return Ok(Claim::Claimed);
                        }
                        let row = idempotency_keys::table
                            .find((&scope, &key))
                            .select(KeyRow::as_select())
                            .get_result(c)
                            .optional()?;
                        if let Some(row) = row {
                            return Ok(Claim::Found(row));
                        }
                    }
                    Ok(Claim::Churned)
                })
            })
            .await
            .map_err(repository_error)?;
        match claim {
            Claim::Claimed => Ok(IdempotencyState::Claimed),
            Claim::Found(row) => row.into_state(),
            Claim::Churned => Err(RepositoryError::Unavailable(
                "the idempotency key kept changing during the claim".into(),
            )),
        }
    }

    async fn complete(
        &self,
        scope: &str,
        key: &str,
        response: &StoredResponse,
        expires_at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let scope = scope.to_owned();
        let key = key.to_owned();
        let status = i32::from(response.status);
        let body = response.body.clone();
        update_one!(
            self.db,
            idempotency_keys::table.find((scope, key)),
            (
                idempotency_keys::state.eq(COMPLETED),
                idempotency_keys::response_status.eq(Some(status)),
                idempotency_keys::response_body.eq(Some(body)),
                idempotency_keys::expires_at.eq(expires_at.as_millis()),
            )
        )
        .await
        .map_err(repository_error)
    }

    async fn release(&self, scope: &str, key: &str) -> Result<(), RepositoryError> {
        let scope = scope.to_owned();
        let key = key.to_owned();
        // Only a claim is forgotten; a completed response stays replayable.
        let claim = idempotency_keys::table
            .find((scope, key))
            .filter(idempotency_keys::state.eq(IN_PROGRESS));
        delete_rows!(self.db, claim)
            .await
            .map_err(repository_error)?;
        Ok(())
    }

    async fn forget_expired(&self, now: Timestamp) -> Result<u64, RepositoryError> {
        let expired =
            idempotency_keys::table.filter(idempotency_keys::expires_at.le(now.as_millis()));
        counted(delete_rows!(self.db, expired), repository_error).await
    }
}
