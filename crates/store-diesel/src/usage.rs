//! Usage counters (kernel `usage`): charges applied inside another repository's transaction, so
//! an object and the usage it costs are written together or not at all.

use diesel::prelude::*;
use idconsent_kernel::{Charge, Metric, QuotaExceeded};
use idconsent_webhook::Effects;

use crate::cached::CacheStatement;
use crate::db::AnyConnection;
use crate::error::DbError;

pub mod schema {
    diesel::table! {
        usage_counters (merchant_id, metric, period) {
            merchant_id -> Text,
            metric -> Text,
            period -> Text,
            used -> BigInt,
        }
    }
}

use schema::usage_counters;

/// The rollback tag of a charge over its limit, one per metric so the quota can be named.
const fn quota_tag(metric: Metric) -> &'static str {
    match metric {
        Metric::Consents => "quota exceeded: consents",
        Metric::Authentications => "quota exceeded: authentications",
        Metric::Verifications => "quota exceeded: verifications",
        Metric::Mandates => "quota exceeded: mandates",
    }
}

/// The quota a failed write of `charges` ran into, if that is why it failed.
pub(crate) fn quota_exceeded(error: &DbError, charges: &[Charge]) -> Option<QuotaExceeded> {
    let tag = error.rollback_tag()?;
    charges
        .iter()
        .find(|charge| quota_tag(charge.metric) == tag)
        .map(|charge| QuotaExceeded {
            metric: charge.metric,
            period: charge.period,
        })
}

/// The rollback of a charge of `metric` (its name) at its limit, as PostgreSQL's one-call
/// functions report it ([`quota_exceeded`] then names the quota).
pub(crate) fn quota_rollback(metric: &str) -> DbError {
    DbError::Rollback(Metric::parse(metric).map_or("quota exceeded", quota_tag))
}

/// Counts each charge, inside the caller's transaction. A charge at its limit fails the whole
/// transaction (see [`quota_exceeded`]). The counter row is created on first use; the
/// conditional update is the limit check, so concurrent writers cannot pass it together. On
/// PostgreSQL the same statements run in `idc_apply_charges`, one round trip for all charges.
pub(crate) fn apply_charges(conn: AnyConnection<'_>, charges: &[Charge]) -> Result<(), DbError> {
    if charges.is_empty() {
        return Ok(());
    }
    let c = match conn {
        AnyConnection::Postgres(c) => {
            return match crate::one_call::apply_charges(c, charges)? {
                Some(metric) => Err(quota_rollback(&metric)),
                None => Ok(()),
            };
        }
        AnyConnection::Sqlite(c) => c,
    };
    for charge in charges {
        let period = charge.period.to_string();
        let key = (
            usage_counters::merchant_id.eq(charge.merchant_id.as_str()),
            usage_counters::metric.eq(charge.metric.as_str()),
            usage_counters::period.eq(period.as_str()),
        );
        let counter = usage_counters::table
            .filter(usage_counters::merchant_id.eq(charge.merchant_id.as_str()))
            .filter(usage_counters::metric.eq(charge.metric.as_str()))
            .filter(usage_counters::period.eq(period.as_str()));
        let limit = charge
            .limit
            .map(|limit| i64::try_from(limit).unwrap_or(i64::MAX));
        diesel::insert_into(usage_counters::table)
            .values((key, usage_counters::used.eq(0i64)))
            .on_conflict_do_nothing()
            .execute(c)?;
        let counted = match limit {
            Some(limit) => diesel::update(counter.filter(usage_counters::used.lt(limit)))
                .set(usage_counters::used.eq(usage_counters::used + 1i64))
                .cached()
                .execute(c)?,
            None => diesel::update(counter)
                .set(usage_counters::used.eq(usage_counters::used + 1i64))
                .cached()
                .execute(c)?,
        };
        if counted == 0 {
            return Err(DbError::Rollback(quota_tag(charge.metric)));
        }
    }
    Ok(())
}

/// Writes a change's effects — its outbox and its charges — inside the caller's transaction.
pub(crate) fn write_effects(mut conn: AnyConnection<'_>, effects: &Effects) -> Result<(), DbError> {
    apply_charges(conn.reborrow(), &effects.charges)?;
    crate::webhook::write_outbox(conn, &effects.outbox)
}
