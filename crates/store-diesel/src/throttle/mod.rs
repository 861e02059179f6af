//! Fixed-window counters (kernel `Throttle`) shared by every process: one conditional write per
//! event.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::{Throttle, ThrottleError, Timestamp};

use crate::db::Db;
use crate::error::DbError;
use crate::repo::{counted, delete_rows, write_with};

pub mod schema {
    diesel::table! {
        throttle_counters (key, window_start) {
            key -> Text,
            window_start -> BigInt,
            used -> BigInt,
        }
    }
}

use schema::throttle_counters;

#[derive(Debug, Clone)]
pub struct DieselThrottle {
    db: Db,
}

impl DieselThrottle {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

fn failed(error: DbError) -> ThrottleError {
    ThrottleError(Box::new(error))
}

#[async_trait]
impl Throttle for DieselThrottle {
    async fn take(
        &self,
        key: &str,
        window_start: Timestamp,
        limit: u64,
    ) -> Result<bool, ThrottleError> {
        let key = key.to_owned();
        let start = window_start.as_millis();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let taken = write_with!(self.db, |c| {
            diesel::insert_into(throttle_counters::table)
                .values((
                    throttle_counters::key.eq(&key),
                    throttle_counters::window_start.eq(start),
                    throttle_counters::used.eq(0i64),
                ))
                .on_conflict_do_nothing()
                .execute(c)?;
            // The condition is the limit: concurrent writers cannot pass it together.
            diesel::update(
                throttle_counters::table
                    .filter(throttle_counters::key.eq(&key))
                    .filter(throttle_counters::window_start.eq(start))
                    .filter(throttle_counters::used.lt(limit)),
            )
            .set(throttle_counters::used.eq(throttle_counters::used + 1i64))
            .execute(c)
        })
        .await
        .map_err(failed)?;
        Ok(taken == 1)
    }

    async fn forget_before(&self, before: Timestamp) -> Result<u64, ThrottleError> {
        let past =
            throttle_counters::table.filter(throttle_counters::window_start.lt(before.as_millis()));
        counted(delete_rows!(self.db, past), failed).await
    }
}
