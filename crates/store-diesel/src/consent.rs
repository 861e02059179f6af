//! Consent sessions on diesel. Each change is written with its webhook outbox in one
//! transaction.

use std::sync::Arc;

use async_trait::async_trait;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text};
use idconsent_consent::ports::{CreateError, CreateRefused};
use idconsent_consent::{
    FloodLimits, Session, SessionRepository, SessionStatus, StoreError, Transaction,
};
use idconsent_kernel::id::{ApplicationId, ClientId, SessionId, TypedId};
use idconsent_kernel::{Currency, Environment, Intent, Money, PhoneNumber, Timestamp};
use idconsent_webhook::{DeliveryStatus, Effects, Outbox};

use crate::cached::CacheStatement;
use crate::db::{AnyConnection, Batcher, Db};
use crate::error::DbError;
use crate::one_call::{ChargeArrays, OutboxArrays, bind_charges, bind_outbox};
use crate::schema::consent_sessions;
use crate::usage::{quota_exceeded, quota_rollback, write_effects};
use crate::webhook::write_outbox;

#[derive(Debug, Clone)]
pub struct DieselSessionStore {
    db: Db,
    /// On PostgreSQL, the creates arriving together, as one call and one commit (ADR 0035).
    creates: Option<Arc<Batcher<NewSession, BatchVerdict>>>,
}

impl DieselSessionStore {
    pub fn new(db: Db) -> Self {
        let creates = db
            .batcher("consents", CREATES_PER_BATCH, Box::new(create_batch))
            .map(Arc::new);
        Self { db, creates }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = consent_sessions)]
struct SessionRow {
    id: String,
    application_id: String,
    client_id: String,
    environment: String,
    recipient: String,
    intent: String,
    transaction_type: String,
    transaction_description: String,
    amount_minor: i64,
    currency: String,
    payee: String,
    callback_url: String,
    status: String,
    created_at: i64,
    expires_at: i64,
    decided_at: Option<i64>,
}

impl SessionRow {
    fn from_session(session: &Session) -> Self {
        Self {
            id: session.id.as_str().to_owned(),
            application_id: session.application_id.as_str().to_owned(),
            client_id: session.client_id.as_str().to_owned(),
            environment: session.environment.as_str().to_owned(),
            recipient: session.recipient.as_str().to_owned(),
            intent: session.intent.as_str().to_owned(),
            transaction_type: session.transaction.kind.clone(),
            transaction_description: session.transaction.description.clone(),
            amount_minor: session.transaction.amount.minor(),
            currency: session.transaction.amount.currency().code().to_owned(),
            payee: session.transaction.payee.clone(),
            callback_url: session.callback_url.clone(),
            status: session.status.as_str().to_owned(),
            created_at: session.created_at.as_millis(),
            expires_at: session.expires_at.as_millis(),
            decided_at: session.decided_at.map(Timestamp::as_millis),
        }
    }

    fn into_session(self) -> Result<Session, StoreError> {
        let corrupt = |what: &str| {
            StoreError::Unavailable(
                format!(
                    "unreadable stored value: consent_sessions.{what} of {}",
                    self.id
                )
                .into(),
            )
        };
        let currency = Currency::parse(&self.currency).map_err(|_| corrupt("currency"))?;
        Ok(Session {
            environment: Environment::parse(&self.environment)
                .ok_or_else(|| corrupt("environment"))?,
            recipient: PhoneNumber::parse(&self.recipient).map_err(|_| corrupt("recipient"))?,
            intent: Intent::parse(&self.intent).ok_or_else(|| corrupt("intent"))?,
            status: SessionStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            transaction: Transaction {
                amount: Money::from_minor(self.amount_minor, currency)
                    .map_err(|_| corrupt("amount_minor"))?,
                kind: self.transaction_type,
                description: self.transaction_description,
                payee: self.payee,
            },
            id: SessionId::from_trusted(self.id),
            application_id: ApplicationId::from_trusted(self.application_id),
            client_id: ClientId::from_trusted(self.client_id),
            callback_url: self.callback_url,
            created_at: Timestamp::from_millis(self.created_at),
            expires_at: Timestamp::from_millis(self.expires_at),
            decided_at: self.decided_at.map(Timestamp::from_millis),
        })
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

const NOT_FOUND: &str = "not found";
const NOT_PENDING: &str = "not pending";

fn decide_error(error: DbError) -> StoreError {
    match error.rollback_tag() {
        Some(NOT_FOUND) => StoreError::NotFound,
        Some(NOT_PENDING) => StoreError::NotPending,
        _ => unavailable(error),
    }
}

/// The advisory lock that, on PostgreSQL, serialises the transactions that create sessions for
/// one recipient in one environment, so their flood counts cannot both pass; SQLite's single
/// writer already does.
fn recipient_lock(row: &SessionRow) -> String {
    format!("consent:{}:{}", row.environment, row.recipient)
}

#[async_trait]
impl SessionRepository for DieselSessionStore {
    async fn create(
        &self,
        session: &Session,
        effects: &Effects,
        limits: &FloodLimits,
        now: Timestamp,
    ) -> Result<(), CreateError> {
        let row = SessionRow::from_session(session);
        let charges = effects.charges.clone();
        let quota_or_store = |error: DbError| match quota_exceeded(&error, &charges) {
            Some(quota) => CreateError::Quota(quota),
            None => CreateError::Store(unavailable(error)),
        };
        let Some(batch) = &self.creates else {
            // SQLite (its writer serialises), or PostgreSQL without its batch thread: the
            // statements in a transaction holding the recipient's lock.
            let (effects, limits) = (effects.clone(), *limits);
            let refused = self
                .db
                .write_locked(recipient_lock(&row), move |conn| {
                    create_in_statements(conn, &row, &effects, &limits, now)
                })
                .await
                .map_err(quota_or_store)?;
            return refused.map_or(Ok(()), |refused| Err(CreateError::Refused(refused)));
        };
        let verdict = batch
            .call(NewSession {
                row,
                effects: effects.clone(),
                limits: *limits,
                now,
            })
            .await
            .map_err(|error| CreateError::Store(unavailable(error)))?;
        if let Some(metric) = &verdict.exceeded {
            return Err(quota_or_store(quota_rollback(metric)));
        }
        match judge(&verdict, limits, now) {
            Ok(None) => Ok(()),
            Ok(Some(refused)) => Err(CreateError::Refused(refused)),
            Err(error) => Err(CreateError::Store(unavailable(error))),
        }
    }

    async fn find(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        let row = crate::repo::find_row!(
            self.db,
            consent_sessions::table,
            id.as_str().to_owned(),
            SessionRow
        )
        .await
        .map_err(unavailable)?;
        row.map(SessionRow::into_session).transpose()
    }

    async fn decide(
        &self,
        id: &SessionId,
        status: SessionStatus,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<(), StoreError> {
        let id = id.as_str().to_owned();
        let effects = effects.clone();
        let charges = effects.charges.clone();
        self.db
            .write(move |mut conn| {
                let changed = crate::with_conn!(conn.reborrow(), |c| {
                    let changed = diesel::update(
                        consent_sessions::table
                            .filter(consent_sessions::id.eq(&id))
                            .filter(consent_sessions::status.eq(SessionStatus::Pending.as_str()))
                            .filter(consent_sessions::expires_at.gt(at.as_millis())),
                    )
                    .set((
                        consent_sessions::status.eq(status.as_str()),
                        consent_sessions::decided_at.eq(Some(at.as_millis())),
                    ))
                    .cached()
                    .execute(c)?;
                    if changed == 0 {
                        let exists = consent_sessions::table
                            .find(&id)
                            .select(consent_sessions::id)
                            .get_result::<String>(c)
                            .optional()?
                            .is_some();
                        return Err(DbError::Rollback(if exists {
                            NOT_PENDING
                        } else {
                            NOT_FOUND
                        }));
                    }
                    Ok::<_, DbError>(changed)
                })?;
                debug_assert_eq!(changed, 1);
                write_effects(conn, &effects)
            })
            .await
            .map_err(|error| match quota_exceeded(&error, &charges) {
                Some(quota) => StoreError::Quota(quota),
                None => decide_error(error),
            })
    }

    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Session>, StoreError> {
        let rows = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| consent_sessions::table
                    .filter(consent_sessions::status.eq(SessionStatus::Pending.as_str()))
                    .filter(consent_sessions::expires_at.le(now.as_millis()))
                    .order((consent_sessions::expires_at, consent_sessions::id))
                    .limit(i64::from(limit))
                    .select(SessionRow::as_select())
                    .load(c))?)
            })
            .await
            .map_err(unavailable)?;
        rows.into_iter().map(SessionRow::into_session).collect()
    }

    async fn expire(
        &self,
        id: &SessionId,
        at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let outbox = outbox.to_vec();
        self.db
            .write(move |mut conn| {
                let changed = crate::with_conn!(conn.reborrow(), |c| diesel::update(
                    consent_sessions::table
                        .filter(consent_sessions::id.eq(&id))
                        .filter(consent_sessions::status.eq(SessionStatus::Pending.as_str()))
                )
                .set((
                    consent_sessions::status.eq(SessionStatus::Expired.as_str()),
                    consent_sessions::decided_at.eq(Some(at.as_millis())),
                ))
                .execute(c))?;
                if changed == 1 {
                    write_outbox(conn, &outbox)?;
                }
                Ok(changed == 1)
            })
            .await
            .map_err(unavailable)
    }
}

/// Creates the session statement by statement in the caller's transaction — on SQLite, or on
/// PostgreSQL without its batch thread: the flood read, the verdict, the session and its
/// effects.
fn create_in_statements(
    mut conn: AnyConnection<'_>,
    row: &SessionRow,
    effects: &Effects,
    limits: &FloodLimits,
    now: Timestamp,
) -> Result<Option<CreateRefused>, DbError> {
    let now_ms = now.as_millis();
    let window_start = limits.window_start(now).as_millis();
    let flood = recipient_flood(conn.reborrow(), row, now_ms, window_start)?;
    let refused = limits
        .pending_refusal(&flood.pending_expiries, now)
        .or_else(|| limits.window_refusal(&flood.created_in_window, now));
    if refused.is_none() {
        crate::cached::insert_counted!(
            conn.reborrow(),
            diesel::insert_into(consent_sessions::table).values(row)
        )?;
        write_effects(conn, effects)?;
    }
    Ok(refused)
}

/// A create waiting for the next batch (PostgreSQL).
pub(crate) struct NewSession {
    row: SessionRow,
    effects: Effects,
    limits: FloodLimits,
    now: Timestamp,
}

/// Creates written together at most: one call, its arrays a few kilobytes per create.
const CREATES_PER_BATCH: usize = 64;

/// What `idc_create_consent_sessions` answers for one create of its batch.
#[derive(QueryableByName)]
pub(crate) struct BatchVerdict {
    /// The create's position in its batch, from 1.
    #[diesel(sql_type = Integer)]
    item: i32,
    #[diesel(sql_type = Bool)]
    created: bool,
    /// The flood read it was judged by, as [`RecipientFlood`] in milliseconds.
    #[diesel(sql_type = Array<BigInt>)]
    pending_expiries: Vec<i64>,
    #[diesel(sql_type = Array<BigInt>)]
    created_in_window: Vec<i64>,
    /// The metric of a charge at its limit: the session was not created.
    #[diesel(sql_type = Nullable<Text>)]
    exceeded: Option<String>,
}

const CREATE_BATCH: &str = "SELECT item, created, pending_expiries, created_in_window, exceeded \
    FROM idc_create_consent_sessions($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
    $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, \
    $32, $33, $34, $35, $36)";

/// Creates a batch of sessions on PostgreSQL in one call and one transaction:
/// `idc_create_consent_sessions` (migrations 000084 and 000087, ADRs 0034 and 0035) takes
/// every recipient's advisory lock and then every counter row it may charge, each in one fixed
/// order (so batches never deadlock), then judges each create in order by its flood counts
/// (`count < limit`, the arithmetic of [`FloodLimits`]) and writes the admitted sessions with
/// their charges and outboxes. Answers in the batch's order.
fn create_batch(
    c: &mut PgConnection,
    batch: Vec<NewSession>,
) -> Result<Vec<BatchVerdict>, DbError> {
    let column = |f: &dyn Fn(&NewSession) -> &str| batch.iter().map(f).collect::<Vec<&str>>();
    let number = |f: &dyn Fn(&NewSession) -> i64| batch.iter().map(f).collect::<Vec<i64>>();
    let limit = |count: u32| i32::try_from(count).unwrap_or(i32::MAX);
    // Each outbox entry and charge names its create's position (from 1).
    let positions = |count: &dyn Fn(&NewSession) -> usize| -> Vec<i32> {
        (1..)
            .zip(&batch)
            .flat_map(|(position, new)| std::iter::repeat_n(position, count(new)))
            .collect()
    };
    let query = diesel::sql_query(CREATE_BATCH)
        .bind::<Array<Text>, _>(
            batch
                .iter()
                .map(|n| recipient_lock(&n.row))
                .collect::<Vec<_>>(),
        )
        .bind::<Array<BigInt>, _>(number(&|n| n.now.as_millis()))
        .bind::<Array<BigInt>, _>(number(&|n| n.limits.window_start(n.now).as_millis()))
        .bind::<Array<Integer>, _>(
            batch
                .iter()
                .map(|n| limit(n.limits.pending_per_application))
                .collect::<Vec<_>>(),
        )
        .bind::<Array<Integer>, _>(
            batch
                .iter()
                .map(|n| limit(n.limits.per_window))
                .collect::<Vec<_>>(),
        )
        .bind::<Text, _>(SessionStatus::Pending.as_str())
        .bind::<Text, _>(DeliveryStatus::Pending.as_str())
        .bind::<Array<Text>, _>(column(&|n| &n.row.id))
        .bind::<Array<Text>, _>(column(&|n| &n.row.application_id))
        .bind::<Array<Text>, _>(column(&|n| &n.row.client_id))
        .bind::<Array<Text>, _>(column(&|n| &n.row.environment))
        .bind::<Array<Text>, _>(column(&|n| &n.row.recipient))
        .bind::<Array<Text>, _>(column(&|n| &n.row.intent))
        .bind::<Array<Text>, _>(column(&|n| &n.row.transaction_type))
        .bind::<Array<Text>, _>(column(&|n| &n.row.transaction_description))
        .bind::<Array<BigInt>, _>(number(&|n| n.row.amount_minor))
        .bind::<Array<Text>, _>(column(&|n| &n.row.currency))
        .bind::<Array<Text>, _>(column(&|n| &n.row.payee))
        .bind::<Array<Text>, _>(column(&|n| &n.row.callback_url))
        .bind::<Array<BigInt>, _>(number(&|n| n.row.created_at))
        .bind::<Array<BigInt>, _>(number(&|n| n.row.expires_at))
        .bind::<Array<Integer>, _>(positions(&|n| n.effects.outbox.len()));
    let query = bind_outbox!(
        query,
        OutboxArrays::of(batch.iter().flat_map(|n| n.effects.outbox.iter()))
    )
    .bind::<Array<Integer>, _>(positions(&|n| n.effects.charges.len()));
    let mut verdicts = bind_charges!(
        query,
        ChargeArrays::new(batch.iter().flat_map(|n| n.effects.charges.iter()))
    )
    .cached()
    .load::<BatchVerdict>(c)?;
    verdicts.sort_unstable_by_key(|verdict| verdict.item);
    Ok(verdicts)
}

/// The refusal of a create judged in a batch, named by the consent crate's rules from the
/// flood read the function judged by.
fn judge(
    verdict: &BatchVerdict,
    limits: &FloodLimits,
    now: Timestamp,
) -> Result<Option<CreateRefused>, DbError> {
    let times = |millis: &[i64]| -> Vec<Timestamp> {
        millis.iter().copied().map(Timestamp::from_millis).collect()
    };
    let refused = limits
        .pending_refusal(&times(&verdict.pending_expiries), now)
        .or_else(|| limits.window_refusal(&times(&verdict.created_in_window), now));
    match (verdict.created, refused) {
        (true, None) => Ok(None),
        (false, Some(refused)) => Ok(Some(refused)),
        // Only if the function's arithmetic drifts from FloodLimits (a contract case would
        // fail first). Created: it is committed, so say so; refused: nothing was written.
        (true, Some(_)) => {
            tracing::error!("flood verdicts disagree: the session was created");
            Ok(None)
        }
        (false, None) => Err(DbError::Rollback("flood verdicts disagree")),
    }
}

/// What the flood limits judge a new session by: the expiries of the recipient's sessions from
/// this application that are pending and unexpired, and the creation times of the recipient's
/// sessions in the window, from any application.
struct RecipientFlood {
    pending_expiries: Vec<Timestamp>,
    created_in_window: Vec<Timestamp>,
}

/// Reads [`RecipientFlood`] in one statement (one round trip on PostgreSQL): the recipient's
/// sessions that count towards either limit.
///
/// The status is compared as `status || ''` so that no index can serve that term: without
/// statistics SQLite otherwise plans this filter on `consent_sessions_by_expiry (status,
/// expires_at)` and visits every pending session of every recipient, which with a few thousand
/// sessions pending was half the cost of a create (docs/performance.md). This way it takes
/// `consent_sessions_by_recipient` and visits the recipient's sessions only. PostgreSQL plans
/// from statistics and takes the same index.
fn recipient_flood(
    conn: AnyConnection<'_>,
    row: &SessionRow,
    now_ms: i64,
    window_start: i64,
) -> Result<RecipientFlood, DbError> {
    let sessions: Vec<(String, String, i64, i64)> = crate::with_conn!(conn, |c| {
        recipient_flood_query!(row, now_ms, window_start)
            .cached()
            .load(c)
    })?;
    let mut flood = RecipientFlood {
        pending_expiries: Vec::new(),
        created_in_window: Vec::new(),
    };
    for (application_id, status, created_at, expires_at) in sessions {
        if application_id == row.application_id
            && status == SessionStatus::Pending.as_str()
            && expires_at > now_ms
        {
            flood
                .pending_expiries
                .push(Timestamp::from_millis(expires_at));
        }
        if created_at > window_start {
            flood
                .created_in_window
                .push(Timestamp::from_millis(created_at));
        }
    }
    Ok(flood)
}

/// The query of [`recipient_flood`], also planned by a test.
macro_rules! recipient_flood_query {
    ($row:expr, $now_ms:expr, $window_start:expr) => {
        consent_sessions::table
            .filter(consent_sessions::recipient.eq(&$row.recipient))
            .filter(consent_sessions::environment.eq(&$row.environment))
            .filter(
                consent_sessions::created_at
                    .gt($window_start)
                    .or(consent_sessions::application_id
                        .eq(&$row.application_id)
                        .and(
                            consent_sessions::status
                                .concat("")
                                .eq(SessionStatus::Pending.as_str()),
                        )
                        .and(consent_sessions::expires_at.gt($now_ms))),
            )
            .select((
                consent_sessions::application_id,
                consent_sessions::status,
                consent_sessions::created_at,
                consent_sessions::expires_at,
            ))
    };
}
use recipient_flood_query;

#[cfg(all(test, feature = "testing"))]
mod tests {
    use diesel::sql_types::Text;

    use super::*;
    use crate::testing::TestDatabase;

    #[derive(QueryableByName)]
    struct Plan {
        #[diesel(sql_type = Text)]
        detail: String,
    }

    fn row() -> SessionRow {
        SessionRow {
            id: "cs_1".into(),
            application_id: "app_1".into(),
            client_id: "cli_1".into(),
            environment: "sandbox".into(),
            recipient: "+15551234567".into(),
            intent: "LOGIN".into(),
            transaction_type: "login".into(),
            transaction_description: "Sign in".into(),
            amount_minor: 0,
            currency: "USD".into(),
            payee: "Shop".into(),
            callback_url: "https://shop.example/hooks".into(),
            status: "pending".into(),
            created_at: 0,
            expires_at: 300_000,
            decided_at: None,
        }
    }

    /// SQLite has no statistics here (we never ANALYZE), so a plan that visits every pending
    /// session would only show as a slow create under load; check the plan instead.
    #[tokio::test]
    async fn the_flood_counts_look_up_the_recipient_index() {
        let database = TestDatabase::sqlite();
        let plans = database
            .db
            .read(|conn| {
                let AnyConnection::Sqlite(c) = conn else {
                    unreachable!("a SQLite database")
                };
                let row = row();
                let query = recipient_flood_query!(row, 1_000_i64, 500_i64);
                let sql = diesel::debug_query::<diesel::sqlite::Sqlite, _>(&query).to_string();
                let sql = sql.split(" -- binds").next().unwrap_or_default().to_owned();
                Ok(diesel::sql_query(format!("EXPLAIN QUERY PLAN {sql}")).load::<Plan>(c)?)
            })
            .await
            .unwrap();
        let details: Vec<&str> = plans.iter().map(|plan| plan.detail.as_str()).collect();
        assert_eq!(details.len(), 1, "{details:?}");
        assert!(
            details[0].contains("consent_sessions_by_recipient (recipient=? AND environment=?)"),
            "{details:?}"
        );
    }
}
