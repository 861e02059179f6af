//! Identity verifications on diesel: each row is also its analysis job. Claims take due rows
//! with `FOR UPDATE SKIP LOCKED` on PostgreSQL (the single writer serialises them on SQLite),
//! so two processes never analyse the same job while its lease runs.

use std::collections::BTreeSet;

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::id::{ApplicationId, TypedId, VerificationId};
use idconsent_kernel::{Environment, Timestamp};
use idconsent_verification::chip::ChipResult;
use idconsent_verification::{
    DailyCap, DocumentType, Images, Outcome, Policy, StoreError, Verification, VerificationStatus,
    VerificationStore,
};
use idconsent_webhook::Effects;
use serde::{Deserialize, Serialize};

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::repo::{duplicate_or, find_row, found, read_with, replace_versioned, unreadable};
use crate::usage::quota_exceeded;

pub mod schema {
    diesel::table! {
        identity_verifications (id) {
            id -> Text,
            application_id -> Text,
            environment -> Text,
            document_type -> Text,
            country -> Text,
            status -> Text,
            created_at -> BigInt,
            leased_until -> Nullable<BigInt>,
            attempts -> Integer,
            version -> BigInt,
            body -> Text,
        }
    }

    diesel::table! {
        identity_sandbox_days (application_id, day) {
            application_id -> Text,
            day -> Text,
            used -> BigInt,
        }
    }
}

use schema::identity_sandbox_days as sandbox_days;
use schema::identity_verifications as jobs;

/// The rollback tag of a create over its daily cap.
const DAILY_CAP_REACHED: &str = "daily cap reached";

#[derive(Debug, Clone)]
pub struct DieselVerificationStore {
    db: Db,
}

impl DieselVerificationStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = jobs)]
#[diesel(treat_none_as_null = true)]
struct VerificationRow {
    id: String,
    application_id: String,
    environment: String,
    document_type: String,
    country: String,
    status: String,
    created_at: i64,
    leased_until: Option<i64>,
    attempts: i32,
    version: i64,
    body: String,
}

/// The parts kept as JSON in `body`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    images: Images,
    callback_url: Option<String>,
    outcome: Option<Outcome>,
    /// Rows written before issue 33 have the default policy and no chip.
    #[serde(default)]
    policy: Policy,
    #[serde(default)]
    chip: Option<ChipResult>,
}

impl VerificationRow {
    fn from_verification(verification: &Verification) -> Result<Self, StoreError> {
        let body = Body {
            images: verification.images.clone(),
            callback_url: verification.callback_url.clone(),
            outcome: verification.outcome.clone(),
            policy: verification.policy.clone(),
            chip: verification.chip.clone(),
        };
        Ok(Self {
            id: verification.id.as_str().to_owned(),
            application_id: verification.application_id.as_str().to_owned(),
            environment: verification.environment.as_str().to_owned(),
            document_type: verification.document_type.as_str().to_owned(),
            country: verification.country.clone(),
            status: verification.status().as_str().to_owned(),
            created_at: verification.created_at.as_millis(),
            leased_until: verification.leased_until.map(Timestamp::as_millis),
            attempts: i32::try_from(verification.attempts).unwrap_or(i32::MAX),
            version: verification.version,
            body: serde_json::to_string(&body)
                .map_err(|error| StoreError::Unavailable(Box::new(error)))?,
        })
    }

    fn into_verification(self) -> Result<Verification, StoreError> {
        let corrupt = |what: &str| {
            StoreError::Unavailable(unreadable("identity_verifications", what, &self.id))
        };
        let body: Body = serde_json::from_str(&self.body).map_err(|_| corrupt("body"))?;
        if VerificationStatus::parse(&self.status).is_none() {
            return Err(corrupt("status"));
        }
        Ok(Verification {
            environment: Environment::parse(&self.environment)
                .ok_or_else(|| corrupt("environment"))?,
            document_type: DocumentType::parse(&self.document_type)
                .ok_or_else(|| corrupt("document_type"))?,
            attempts: u32::try_from(self.attempts).map_err(|_| corrupt("attempts"))?,
            id: VerificationId::from_trusted(self.id),
            application_id: ApplicationId::from_trusted(self.application_id),
            country: self.country,
            images: body.images,
            callback_url: body.callback_url,
            policy: body.policy,
            chip: body.chip,
            created_at: Timestamp::from_millis(self.created_at),
            outcome: body.outcome,
            leased_until: self.leased_until.map(Timestamp::from_millis),
            version: self.version,
        })
    }
}

/// Counts one create of `application` on `cap.day`, inside the caller's transaction; at the
/// limit the transaction rolls back with [`DAILY_CAP_REACHED`]. The row is made on first use;
/// the conditional update is the check, so concurrent creates cannot pass it together (on
/// PostgreSQL the second waits for the first's row lock and re-reads `used`).
fn count_against(conn: AnyConnection<'_>, application: &str, cap: DailyCap) -> Result<(), DbError> {
    let day = cap.day.to_string();
    let limit = i64::from(cap.limit);
    let counted = crate::with_conn!(conn, |c| {
        diesel::insert_into(sandbox_days::table)
            .values((
                sandbox_days::application_id.eq(application),
                sandbox_days::day.eq(&day),
                sandbox_days::used.eq(0i64),
            ))
            .on_conflict_do_nothing()
            .execute(c)?;
        diesel::update(
            sandbox_days::table
                .filter(sandbox_days::application_id.eq(application))
                .filter(sandbox_days::day.eq(&day))
                .filter(sandbox_days::used.lt(limit)),
        )
        .set(sandbox_days::used.eq(sandbox_days::used + 1i64))
        .execute(c)
    })?;
    if counted == 0 {
        return Err(DbError::Rollback(DAILY_CAP_REACHED));
    }
    Ok(())
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

const PROCESSING: &str = "processing";

#[async_trait]
impl VerificationStore for DieselVerificationStore {
    async fn create(
        &self,
        verification: &Verification,
        effects: &Effects,
        cap: Option<DailyCap>,
    ) -> Result<(), StoreError> {
        let row = VerificationRow::from_verification(verification)?;
        let charges = effects.charges.clone();
        let effects = effects.clone();
        self.db
            .write(move |mut conn| {
                if let Some(cap) = cap {
                    count_against(conn.reborrow(), &row.application_id, cap)?;
                }
                crate::with_conn!(conn.reborrow(), |c| diesel::insert_into(jobs::table)
                    .values(&row)
                    .execute(c))?;
                crate::usage::write_effects(conn, &effects)
            })
            .await
            .map_err(duplicate_or(StoreError::Duplicate, |error| {
                if error.rollback_tag() == Some(DAILY_CAP_REACHED) {
                    return StoreError::DailyCapReached;
                }
                match quota_exceeded(&error, &charges) {
                    Some(quota) => StoreError::Quota(quota),
                    None => unavailable(error),
                }
            }))
    }

    async fn find(&self, id: &VerificationId) -> Result<Option<Verification>, StoreError> {
        let row = find_row!(
            self.db,
            jobs::table,
            id.as_str().to_owned(),
            VerificationRow
        );
        found(row, unavailable, VerificationRow::into_verification).await
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        until: Timestamp,
        limit: u32,
    ) -> Result<Vec<Verification>, StoreError> {
        let (now, until) = (now.as_millis(), until.as_millis());
        let due = move || {
            jobs::table
                .filter(jobs::status.eq(PROCESSING))
                .filter(jobs::leased_until.is_null().or(jobs::leased_until.le(now)))
        };
        // Workers poll every second when idle: a read answers "nothing to do" without taking
        // the single writer (SQLite) or a transaction (PostgreSQL).
        let any_due = read_with!(self.db, |c| diesel::select(diesel::dsl::exists(due()))
            .get_result::<bool>(c))
        .await
        .map_err(unavailable)?;
        if !any_due {
            return Ok(Vec::new());
        }
        let mut rows = self
            .db
            .write(move |conn| {
                let due = || {
                    due()
                        .order((jobs::created_at, jobs::id))
                        .limit(i64::from(limit))
                        .select(jobs::id)
                };
                let mut conn = conn;
                let ids: Vec<String> = match conn.reborrow() {
                    AnyConnection::Sqlite(c) => due().load(c)?,
                    // Rows another process is claiming right now are skipped, not waited for.
                    AnyConnection::Postgres(c) => due().for_update().skip_locked().load(c)?,
                };
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                Ok(crate::with_conn!(conn, |c| diesel::update(
                    jobs::table.filter(jobs::id.eq_any(&ids))
                )
                .set((
                    jobs::leased_until.eq(until),
                    jobs::attempts.eq(jobs::attempts + 1),
                    jobs::version.eq(jobs::version + 1),
                ))
                .returning(VerificationRow::as_returning())
                .get_results(c))?)
            })
            .await
            .map_err(unavailable)?;
        rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        rows.into_iter()
            .map(VerificationRow::into_verification)
            .collect()
    }

    async fn complete(
        &self,
        verification: &Verification,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let row = VerificationRow::from_verification(verification)?;
        replace_versioned!(
            self.db,
            jobs::table,
            jobs::id,
            jobs::version,
            row,
            expected_version,
            effects.clone()
        )
        .await
        .map_err(unavailable)
    }

    async fn images_in_use(&self, ids: &[VerificationId]) -> Result<BTreeSet<String>, StoreError> {
        if ids.is_empty() {
            return Ok(BTreeSet::new());
        }
        let ids: Vec<String> = ids.iter().map(|id| id.as_str().to_owned()).collect();
        let rows: Vec<(String, String)> = read_with!(self.db, |c| jobs::table
            .filter(jobs::id.eq_any(&ids))
            .filter(jobs::status.eq(PROCESSING))
            .select((jobs::id, jobs::body))
            .load(c))
        .await
        .map_err(unavailable)?;
        let mut keys = BTreeSet::new();
        for (id, body) in rows {
            let body: Body = serde_json::from_str(&body).map_err(|_| {
                StoreError::Unavailable(unreadable("identity_verifications", "body", &id))
            })?;
            keys.extend(body.images.keys());
        }
        Ok(keys)
    }
}
