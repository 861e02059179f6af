//! PostgreSQL's one-call writes (migration `000084_one_call_writes`, ADR 0034): PL/pgSQL
//! functions that run several statements in one round trip — and, called on their own, in one
//! transaction without `BEGIN` and `COMMIT` round trips. This module binds their arrays; the
//! repositories call them on PostgreSQL where SQLite runs the statements one by one (a SQLite
//! statement costs no round trip).

use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sql_types::{Integer, Nullable, Text};
use idconsent_kernel::Charge;
use idconsent_webhook::{DeliveryStatus, Outbox};

use crate::cached::CacheStatement;
use crate::error::DbError;

/// A change's outbox as the arrays `idc_write_outbox` takes: the events' columns, then their
/// deliveries' (each delivery names its event).
pub(crate) struct OutboxArrays<'a> {
    pub event_ids: Vec<&'a str>,
    pub event_types: Vec<&'a str>,
    pub applications: Vec<&'a str>,
    pub environments: Vec<&'a str>,
    pub bodies: Vec<&'a [u8]>,
    pub created_at: Vec<i64>,
    pub delivery_ids: Vec<&'a str>,
    pub delivery_events: Vec<&'a str>,
    pub urls: Vec<&'a str>,
}

impl<'a> OutboxArrays<'a> {
    pub fn new(outbox: &'a [Outbox]) -> Self {
        Self::of(outbox.iter())
    }

    /// The arrays of several changes' outboxes, one after the other.
    pub fn of<E>(entries: E) -> Self
    where
        E: Iterator<Item = &'a Outbox> + Clone,
    {
        let events = || entries.clone().map(|entry| &entry.event);
        let deliveries = || {
            entries
                .clone()
                .flat_map(|entry| entry.destinations.iter().map(move |d| (entry, d)))
        };
        Self {
            event_ids: events().map(|e| e.id.as_str()).collect(),
            event_types: events().map(|e| e.event_type.as_str()).collect(),
            applications: events().map(|e| e.application_id.as_str()).collect(),
            environments: events().map(|e| e.environment.as_str()).collect(),
            bodies: entries.clone().map(|entry| entry.body.as_slice()).collect(),
            created_at: events().map(|e| e.created_at.as_millis()).collect(),
            delivery_ids: deliveries().map(|(_, d)| d.delivery_id.as_str()).collect(),
            delivery_events: deliveries().map(|(e, _)| e.event.id.as_str()).collect(),
            urls: deliveries().map(|(_, d)| d.url.as_str()).collect(),
        }
    }
}

/// Binds [`OutboxArrays`] (moved) as the next nine parameters of `$query`.
macro_rules! bind_outbox {
    ($query:expr, $arrays:expr) => {{
        let arrays = $arrays;
        $query
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.event_ids)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.event_types)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.applications)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.environments)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Binary>, _>(arrays.bodies)
            .bind::<diesel::sql_types::Array<diesel::sql_types::BigInt>, _>(arrays.created_at)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.delivery_ids)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.delivery_events)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.urls)
    }};
}
pub(crate) use bind_outbox;

/// Charges as the arrays `idc_apply_charges` takes; a limit of `None` is unlimited.
pub(crate) struct ChargeArrays {
    pub merchants: Vec<String>,
    pub metrics: Vec<&'static str>,
    pub periods: Vec<String>,
    pub limits: Vec<Option<i64>>,
}

impl ChargeArrays {
    pub fn new<'c>(charges: impl Iterator<Item = &'c Charge> + Clone) -> Self {
        Self {
            merchants: charges
                .clone()
                .map(|c| c.merchant_id.as_str().to_owned())
                .collect(),
            metrics: charges.clone().map(|c| c.metric.as_str()).collect(),
            periods: charges.clone().map(|c| c.period.to_string()).collect(),
            limits: charges
                .map(|c| {
                    c.limit
                        .map(|limit| i64::try_from(limit).unwrap_or(i64::MAX))
                })
                .collect(),
        }
    }
}

/// Binds [`ChargeArrays`] (moved) as the next four parameters of `$query`.
macro_rules! bind_charges {
    ($query:expr, $arrays:expr) => {{
        let arrays = $arrays;
        $query
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.merchants)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.metrics)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(arrays.periods)
            .bind::<diesel::sql_types::Array<diesel::sql_types::Nullable<diesel::sql_types::BigInt>>, _>(arrays.limits)
    }};
}
pub(crate) use bind_charges;

#[derive(QueryableByName)]
struct Written {
    #[diesel(sql_type = Integer)]
    #[allow(dead_code)]
    written: i32,
}

/// Writes `outbox` (events and deliveries, whatever their number) in one round trip, inside
/// the caller's transaction.
pub(crate) fn write_outbox(c: &mut PgConnection, outbox: &[Outbox]) -> Result<(), DbError> {
    let query = diesel::sql_query(
        "SELECT idc_write_outbox($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) AS written",
    );
    bind_outbox!(query, OutboxArrays::new(outbox))
        .bind::<Text, _>(DeliveryStatus::Pending.as_str())
        .cached()
        // Loaded, not executed: PostgreSQL then keeps it prepared (crate::cached).
        .load::<Written>(c)?;
    Ok(())
}

#[derive(QueryableByName)]
struct Exceeded {
    #[diesel(sql_type = Nullable<Text>)]
    metric: Option<String>,
}

/// Counts `charges` in one round trip, inside the caller's transaction; returns the metric of
/// the first charge at its limit (the caller must roll back: the charges before it counted).
pub(crate) fn apply_charges(
    c: &mut PgConnection,
    charges: &[Charge],
) -> Result<Option<String>, DbError> {
    let query = diesel::sql_query("SELECT idc_apply_charges($1, $2, $3, $4) AS metric");
    let exceeded = bind_charges!(query, ChargeArrays::new(charges.iter()))
        .cached()
        .get_result::<Exceeded>(c)?;
    Ok(exceeded.metric)
}
