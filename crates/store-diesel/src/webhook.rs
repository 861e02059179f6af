//! The webhook outbox on diesel: `DeliveryStore`, and `write_outbox` for other repositories
//! to call inside their own transactions.

use std::collections::HashMap;

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text};
use idconsent_kernel::id::{ApplicationId, DeliveryId, EventId, TypedId};
use idconsent_kernel::{Environment, Page, PageRequest, Timestamp};
use idconsent_webhook::{
    Attempt, AttemptRecord, Delivery, DeliveryStatus, DeliveryStore, EventType, ManualRetries,
    ManualRetry, NextStep, Outbox, RetryAllowance, StoreError,
};

use crate::cached::{CacheStatement, in_list};
use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::schema::{webhook_attempts, webhook_deliveries, webhook_events};

#[derive(Debug, Clone)]
pub struct DieselDeliveryStore {
    db: Db,
}

impl DieselDeliveryStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

/// Writes events and their pending deliveries. Call it inside the transaction of the state
/// change the events report, so both commit or neither does.
pub(crate) fn write_outbox(conn: AnyConnection<'_>, outbox: &[Outbox]) -> Result<(), DbError> {
    if outbox.is_empty() {
        return Ok(());
    }
    match conn {
        // Events and deliveries in one round trip, whatever their number.
        AnyConnection::Postgres(c) => crate::one_call::write_outbox(c, outbox)?,
        AnyConnection::Sqlite(c) => {
            let pending = DeliveryStatus::Pending.as_str();
            for entry in outbox {
                let event = &entry.event;
                diesel::insert_into(webhook_events::table)
                    .values((
                        webhook_events::id.eq(event.id.as_str()),
                        webhook_events::event_type.eq(event.event_type.as_str()),
                        webhook_events::application_id.eq(event.application_id.as_str()),
                        webhook_events::environment.eq(event.environment.as_str()),
                        webhook_events::body.eq(&entry.body),
                        webhook_events::created_at.eq(event.created_at.as_millis()),
                    ))
                    .execute(c)?;
            }
            let deliveries = outbox
                .iter()
                .flat_map(|entry| entry.destinations.iter().map(move |d| (entry, d)));
            for (entry, destination) in deliveries {
                let event = &entry.event;
                diesel::insert_into(webhook_deliveries::table)
                    .values((
                        webhook_deliveries::id.eq(destination.delivery_id.as_str()),
                        webhook_deliveries::event_id.eq(event.id.as_str()),
                        webhook_deliveries::application_id.eq(event.application_id.as_str()),
                        webhook_deliveries::environment.eq(event.environment.as_str()),
                        webhook_deliveries::url.eq(destination.url.as_str()),
                        webhook_deliveries::status.eq(pending),
                        webhook_deliveries::next_attempt_at.eq(Some(event.created_at.as_millis())),
                        webhook_deliveries::created_at.eq(event.created_at.as_millis()),
                    ))
                    .cached()
                    .execute(c)?;
            }
        }
    }
    Ok(())
}

/// One array parameter: `f` of each item.
fn column<'a, T, U>(items: &'a [T], f: impl Fn(&'a T) -> U) -> Vec<U> {
    items.iter().map(f).collect()
}

#[derive(Debug, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = webhook_deliveries)]
struct DeliveryRow {
    id: String,
    event_id: String,
    application_id: String,
    environment: String,
    url: String,
    status: String,
    next_attempt_at: Option<i64>,
    created_at: i64,
}

#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = webhook_attempts)]
struct AttemptRow {
    delivery_id: String,
    attempted_at: i64,
    status_code: Option<i32>,
    error: Option<String>,
    duration_ms: i64,
}

/// An event's id, type and body.
type EventRow = (String, String, Vec<u8>);

/// Everything a delivery needs besides its own row.
struct Parts {
    events: HashMap<String, (String, Vec<u8>)>,
    attempts: HashMap<String, Vec<Attempt>>,
}

/// Loads the events and attempts of `rows` in two queries.
fn load_parts(mut conn: AnyConnection<'_>, rows: &[DeliveryRow]) -> Result<Parts, DbError> {
    let event_ids = in_list(rows.iter().map(|row| row.event_id.as_str()).collect());
    let delivery_ids = in_list(rows.iter().map(|row| row.id.as_str()).collect());
    let (events, attempts): (Vec<EventRow>, Vec<AttemptRow>) =
        crate::with_conn!(conn.reborrow(), |c| {
            let events = webhook_events::table
                .filter(webhook_events::id.eq_any(&event_ids))
                .select((
                    webhook_events::id,
                    webhook_events::event_type,
                    webhook_events::body,
                ))
                .cached()
                .load(c)?;
            let attempts = webhook_attempts::table
                .filter(webhook_attempts::delivery_id.eq_any(&delivery_ids))
                // Grouped per delivery below: ordered as the index `(delivery_id, id)` reads.
                .order((webhook_attempts::delivery_id, webhook_attempts::id))
                .select(AttemptRow::as_select())
                .cached()
                .load(c)?;
            Ok::<_, DbError>((events, attempts))
        })?;
    let mut grouped: HashMap<String, Vec<Attempt>> = HashMap::new();
    for row in attempts {
        grouped.entry(row.delivery_id).or_default().push(Attempt {
            at: Timestamp::from_millis(row.attempted_at),
            status_code: row.status_code.and_then(|code| u16::try_from(code).ok()),
            error: row.error,
            duration_ms: u64::try_from(row.duration_ms).unwrap_or(0),
        });
    }
    Ok(Parts {
        events: events
            .into_iter()
            .map(|(id, event_type, body)| (id, (event_type, body)))
            .collect(),
        attempts: grouped,
    })
}

fn assemble(rows: Vec<DeliveryRow>, mut parts: Parts) -> Result<Vec<Delivery>, StoreError> {
    rows.into_iter()
        .map(|row| {
            let corrupt = |what: &str| {
                StoreError::Unavailable(
                    format!("unreadable stored value: {what} of {}", row.id).into(),
                )
            };
            // One event may have several deliveries (one per destination).
            let (event_type, body) = parts
                .events
                .get(&row.event_id)
                .cloned()
                .ok_or_else(|| corrupt("event"))?;
            Ok(Delivery {
                event_type: EventType::stored(event_type).map_err(|_| corrupt("event type"))?,
                environment: Environment::parse(&row.environment)
                    .ok_or_else(|| corrupt("environment"))?,
                status: DeliveryStatus::parse(&row.status).ok_or_else(|| corrupt("status"))?,
                attempts: parts.attempts.remove(&row.id).unwrap_or_default(),
                id: DeliveryId::from_trusted(row.id),
                event_id: EventId::from_trusted(row.event_id),
                application_id: ApplicationId::from_trusted(row.application_id),
                url: row.url,
                body,
                next_attempt_at: row.next_attempt_at.map(Timestamp::from_millis),
                created_at: Timestamp::from_millis(row.created_at),
            })
        })
        .collect()
}

#[async_trait]
impl DeliveryStore for DieselDeliveryStore {
    async fn enqueue(&self, outbox: &[Outbox]) -> Result<(), StoreError> {
        let outbox = outbox.to_vec();
        self.db
            .write(move |conn| write_outbox(conn, &outbox))
            .await
            .map_err(unavailable)
    }

    async fn list(
        &self,
        application: &ApplicationId,
        environment: Environment,
        status: Option<DeliveryStatus>,
        page: PageRequest,
    ) -> Result<Page<Delivery>, StoreError> {
        let application = application.as_str().to_owned();
        let (rows, total, parts) = self
            .db
            .read(move |mut conn| {
                let (rows, total): (Vec<DeliveryRow>, i64) =
                    crate::with_conn!(conn.reborrow(), |c| {
                        let scoped = || {
                            let mut query = webhook_deliveries::table
                                .filter(webhook_deliveries::application_id.eq(&application))
                                .filter(webhook_deliveries::environment.eq(environment.as_str()))
                                .into_boxed();
                            if let Some(status) = status {
                                query =
                                    query.filter(webhook_deliveries::status.eq(status.as_str()));
                            }
                            query
                        };
                        let order = (
                            webhook_deliveries::created_at.desc(),
                            webhook_deliveries::id.desc(),
                        );
                        Ok::<_, DbError>(crate::repo::page_rows!(
                            c,
                            scoped,
                            order,
                            DeliveryRow,
                            page
                        ))
                    })?;
                let parts = load_parts(conn, &rows)?;
                Ok((rows, total, parts))
            })
            .await
            .map_err(unavailable)?;
        Ok(Page {
            items: assemble(rows, parts)?,
            request: page,
            total: u64::try_from(total).unwrap_or(0),
        })
    }

    async fn find(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &DeliveryId,
    ) -> Result<Option<Delivery>, StoreError> {
        let application = application.as_str().to_owned();
        let id = id.as_str().to_owned();
        let (rows, parts) = self
            .db
            .read(move |mut conn| {
                let rows: Vec<DeliveryRow> =
                    crate::with_conn!(conn.reborrow(), |c| webhook_deliveries::table
                        .filter(webhook_deliveries::id.eq(&id))
                        .filter(webhook_deliveries::application_id.eq(&application))
                        .filter(webhook_deliveries::environment.eq(environment.as_str()))
                        .select(DeliveryRow::as_select())
                        .load(c))?;
                let parts = load_parts(conn, &rows)?;
                Ok((rows, parts))
            })
            .await
            .map_err(unavailable)?;
        Ok(assemble(rows, parts)?.into_iter().next())
    }

    async fn lease_due(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: u32,
        skip: &[ApplicationId],
    ) -> Result<Vec<Delivery>, StoreError> {
        // Application ids have no commas: one bound text stands for the whole list.
        let skip = skip
            .iter()
            .map(ApplicationId::as_str)
            .collect::<Vec<_>>()
            .join(",");
        // The lease is one statement; the reads after it need no transaction with it (should
        // they fail, the lease lapses as if this process had died).
        let (rows, parts) = self
            .db
            .write_autocommit(move |mut conn| {
                let rows = lease_rows(conn.reborrow(), now, lease_until, limit, &skip)?;
                let parts = load_parts(conn, &rows)?;
                Ok((rows, parts))
            })
            .await
            .map_err(unavailable)?;
        let mut deliveries = assemble(rows, parts)?;
        deliveries.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(deliveries)
    }

    async fn release(&self, ids: &[DeliveryId], at: Timestamp) -> Result<(), StoreError> {
        let ids = in_list(ids.iter().map(|id| id.as_str().to_owned()).collect());
        self.db
            .write(move |conn| {
                crate::with_conn!(conn, |c| diesel::update(
                    webhook_deliveries::table
                        .filter(webhook_deliveries::id.eq_any(&ids))
                        .filter(webhook_deliveries::status.eq(DeliveryStatus::Pending.as_str()))
                )
                .set(webhook_deliveries::next_attempt_at.eq(Some(at.as_millis())))
                .cached()
                .execute(c))?;
                Ok(())
            })
            .await
            .map_err(unavailable)
    }

    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<Vec<bool>, StoreError> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<AttemptWrite> = records.iter().map(AttemptWrite::from).collect();
        let found = self
            .db
            .write_autocommit(move |conn| match conn {
                // One statement (one round trip) for the whole batch, atomic on its own.
                AnyConnection::Postgres(c) => {
                    let found: Vec<FoundDelivery> = diesel::sql_query(RECORD_ATTEMPTS)
                        .bind::<Array<Text>, _>(column(&rows, |r| &r.id))
                        .bind::<Array<Text>, _>(column(&rows, |r| r.status))
                        .bind::<Array<Nullable<BigInt>>, _>(column(&rows, |r| r.next_attempt_at))
                        .bind::<Array<BigInt>, _>(column(&rows, |r| r.attempted_at))
                        .bind::<Array<Nullable<Integer>>, _>(column(&rows, |r| r.status_code))
                        .bind::<Array<Nullable<Text>>, _>(column(&rows, |r| r.error.as_deref()))
                        .bind::<Array<BigInt>, _>(column(&rows, |r| r.duration_ms))
                        .cached()
                        .load(c)?;
                    let found: std::collections::HashSet<String> =
                        found.into_iter().map(|row| row.delivery_id).collect();
                    Ok(rows.iter().map(|row| found.contains(&row.id)).collect())
                }
                // SQLite has no writes in `WITH`: two statements each, in the writer's group
                // commit.
                AnyConnection::Sqlite(c) => rows
                    .iter()
                    .map(|row| {
                        let updated = diesel::update(webhook_deliveries::table.find(&row.id))
                            .set((
                                webhook_deliveries::status.eq(row.status),
                                webhook_deliveries::next_attempt_at.eq(row.next_attempt_at),
                            ))
                            .cached()
                            .execute(c)?;
                        if updated == 0 {
                            return Ok(false);
                        }
                        diesel::insert_into(webhook_attempts::table)
                            .values((
                                webhook_attempts::delivery_id.eq(&row.id),
                                webhook_attempts::attempted_at.eq(row.attempted_at),
                                webhook_attempts::status_code.eq(row.status_code),
                                webhook_attempts::error.eq(&row.error),
                                webhook_attempts::duration_ms.eq(row.duration_ms),
                            ))
                            .execute(c)?;
                        Ok::<_, DbError>(true)
                    })
                    .collect(),
            })
            .await
            .map_err(unavailable)?;
        Ok(found)
    }

    async fn retry_now(
        &self,
        application: &ApplicationId,
        environment: Environment,
        id: &DeliveryId,
        now: Timestamp,
        allowance: RetryAllowance,
    ) -> Result<ManualRetry, StoreError> {
        let scoped_application = application.as_str().to_owned();
        let scoped_id = id.as_str().to_owned();
        let refused = self
            .db
            .write(move |mut conn| {
                // Read under lock (PostgreSQL; SQLite has one writer), judge, apply (ADR 0018).
                let scoped = webhook_deliveries::table
                    .filter(webhook_deliveries::id.eq(&scoped_id))
                    .filter(webhook_deliveries::application_id.eq(&scoped_application))
                    .filter(webhook_deliveries::environment.eq(environment.as_str()))
                    .select((
                        webhook_deliveries::manual_retries,
                        webhook_deliveries::manual_retries_since,
                    ));
                let found: Option<(i32, Option<i64>)> = match &mut conn {
                    AnyConnection::Sqlite(c) => scoped.first(&mut **c).optional()?,
                    AnyConnection::Postgres(c) => scoped.for_update().first(&mut **c).optional()?,
                };
                let Some((count, since)) = found else {
                    return Ok(Some(None));
                };
                let current = ManualRetries {
                    count: u32::try_from(count).unwrap_or(0),
                    since: since.map(Timestamp::from_millis),
                };
                let counted = match allowance.judge(current, now) {
                    Ok(counted) => counted,
                    Err(retry_at) => return Ok(Some(Some(retry_at))),
                };
                crate::with_conn!(conn, |c| diesel::update(
                    webhook_deliveries::table.find(&scoped_id)
                )
                .set((
                    webhook_deliveries::status.eq(DeliveryStatus::Pending.as_str()),
                    webhook_deliveries::next_attempt_at.eq(Some(now.as_millis())),
                    webhook_deliveries::manual_retries
                        .eq(i32::try_from(counted.count).unwrap_or(i32::MAX)),
                    webhook_deliveries::manual_retries_since
                        .eq(counted.since.map(Timestamp::as_millis)),
                ))
                .execute(c))?;
                Ok(None)
            })
            .await
            .map_err(unavailable)?;
        match refused {
            Some(None) => Ok(ManualRetry::NotFound),
            Some(Some(retry_at)) => Ok(ManualRetry::Refused { retry_at }),
            None => Ok(self
                .find(application, environment, id)
                .await?
                .map_or(ManualRetry::NotFound, ManualRetry::Retried)),
        }
    }
}

/// Records an attempt and the delivery's next step in one statement (PostgreSQL); nothing when
/// the delivery does not exist.
/// Records a batch of attempts: each delivery takes the status of its last attempt in the
/// batch, and gets every attempt appended in the batch's order. Answers the deliveries found.
const RECORD_ATTEMPTS: &str = "WITH input AS (\
    SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::int[], \
        $6::text[], $7::bigint[]) WITH ORDINALITY \
        AS t(id, status, next_attempt_at, attempted_at, status_code, error, duration_ms, position)), \
    updated AS (\
    UPDATE webhook_deliveries d SET status = last.status, next_attempt_at = last.next_attempt_at \
    FROM (SELECT DISTINCT ON (id) * FROM input ORDER BY id, position DESC) last \
    WHERE d.id = last.id RETURNING d.id), \
    inserted AS (\
    INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, error, duration_ms) \
    SELECT id, attempted_at, status_code, error, duration_ms FROM input \
    WHERE id IN (SELECT id FROM updated) ORDER BY position RETURNING delivery_id) \
    SELECT DISTINCT delivery_id FROM inserted";

/// An attempt as the statements bind it.
struct AttemptWrite {
    id: String,
    status: &'static str,
    next_attempt_at: Option<i64>,
    attempted_at: i64,
    status_code: Option<i32>,
    error: Option<String>,
    duration_ms: i64,
}

impl From<&AttemptRecord> for AttemptWrite {
    fn from(record: &AttemptRecord) -> Self {
        let (status, next_attempt_at) = match record.next {
            NextStep::Succeeded => (DeliveryStatus::Succeeded, None),
            NextStep::RetryAt(at) => (DeliveryStatus::Pending, Some(at.as_millis())),
            NextStep::Failed => (DeliveryStatus::Failed, None),
        };
        Self {
            id: record.delivery.as_str().to_owned(),
            status: status.as_str(),
            next_attempt_at,
            attempted_at: record.attempt.at.as_millis(),
            status_code: record.attempt.status_code.map(i32::from),
            error: record.attempt.error.clone(),
            duration_ms: i64::try_from(record.attempt.duration_ms).unwrap_or(i64::MAX),
        }
    }
}

#[derive(QueryableByName)]
struct FoundDelivery {
    #[diesel(sql_type = Text)]
    delivery_id: String,
}

/// Moves due deliveries' next attempt to the end of the lease and returns them, in one
/// statement; PostgreSQL skips rows another worker holds.
fn lease_rows(
    conn: AnyConnection<'_>,
    now: Timestamp,
    lease_until: Timestamp,
    limit: u32,
    skip: &str,
) -> Result<Vec<DeliveryRow>, DbError> {
    const LEASE: &str = "UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE id IN (\
        SELECT id FROM webhook_deliveries \
        WHERE status = $2 AND next_attempt_at <= $3{SKIP} \
        ORDER BY next_attempt_at, id LIMIT $4{LOCK}) \
        RETURNING id, event_id, application_id, environment, url, status, next_attempt_at, created_at";
    let sql = match &conn {
        // Numbered `?N` parameters: SQLite numbers `$N` names by first appearance, and the skip
        // list appears before the limit.
        AnyConnection::Sqlite(_) => LEASE
            .replace("{LOCK}", "")
            .replace(
                "{SKIP}",
                " AND instr(',' || $5 || ',', ',' || application_id || ',') = 0",
            )
            .replace('$', "?"),
        AnyConnection::Postgres(_) => LEASE.replace("{LOCK}", " FOR UPDATE SKIP LOCKED").replace(
            "{SKIP}",
            " AND NOT (application_id = ANY (string_to_array($5, ',')))",
        ),
    };
    let rows = crate::with_conn!(conn, |c| diesel::sql_query(sql)
        .bind::<BigInt, _>(lease_until.as_millis())
        .bind::<Text, _>(DeliveryStatus::Pending.as_str())
        .bind::<BigInt, _>(now.as_millis())
        .bind::<BigInt, _>(i64::from(limit))
        .bind::<Text, _>(skip)
        .cached()
        .load(c)?);
    Ok(rows)
}
