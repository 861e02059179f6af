//! `ConfirmationStore` on diesel: one row per hosted-page subject; every limit is a conditional
//! statement on that row.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::upsert::excluded;
use idconsent_hosted::{
    CeremonyStep, Confirmation, ConfirmationStore, Issued, NewCode, StoreError, Taken,
};
use idconsent_kernel::Timestamp;

use crate::db::Db;
use crate::error::DbError;
use crate::repo::{counted, delete_rows, find_row, update_rows};

pub mod schema {
    diesel::table! {
        hosted_confirmations (subject) {
            subject -> Text,
            code_hash -> Nullable<Text>,
            code_expires_at -> BigInt,
            attempts_left -> Integer,
            code_sent_at -> BigInt,
            locked_until -> Nullable<BigInt>,
            token_hash -> Nullable<Text>,
            token_expires_at -> Nullable<BigInt>,
            ceremony -> Nullable<Text>,
            passkey -> Nullable<Text>,
            passkey_counter -> BigInt,
            context_hash -> Nullable<Text>,
        }
    }
}

use schema::hosted_confirmations as rows;

#[derive(Debug, Clone)]
pub struct DieselConfirmationStore {
    db: Db,
}

impl DieselConfirmationStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = rows)]
struct Row {
    subject: String,
    code_hash: Option<String>,
    code_expires_at: i64,
    attempts_left: i32,
    code_sent_at: i64,
    locked_until: Option<i64>,
    token_hash: Option<String>,
    token_expires_at: Option<i64>,
    ceremony: Option<String>,
    passkey: Option<String>,
    passkey_counter: i64,
    context_hash: Option<String>,
}

impl Row {
    fn into_confirmation(self) -> Confirmation {
        Confirmation {
            subject: self.subject,
            code_hash: self.code_hash,
            code_expires_at: Timestamp::from_millis(self.code_expires_at),
            attempts_left: u32::try_from(self.attempts_left).unwrap_or(0),
            code_sent_at: Timestamp::from_millis(self.code_sent_at),
            locked_until: self.locked_until.map(Timestamp::from_millis),
            token_hash: self.token_hash,
            token_expires_at: self.token_expires_at.map(Timestamp::from_millis),
            ceremony: self.ceremony,
            passkey: self.passkey,
            passkey_counter: u32::try_from(self.passkey_counter).unwrap_or(u32::MAX),
            context_hash: self.context_hash,
        }
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError(Box::new(error))
}

impl DieselConfirmationStore {
    async fn row(&self, subject: &str) -> Result<Option<Confirmation>, StoreError> {
        find_row!(self.db, rows::table, subject.to_owned(), Row)
            .await
            .map_err(unavailable)
            .map(|row| row.map(Row::into_confirmation))
    }
}

#[async_trait]
impl ConfirmationStore for DieselConfirmationStore {
    async fn issue_code(
        &self,
        code: &NewCode,
        resend_cutoff: Timestamp,
        now: Timestamp,
    ) -> Result<Issued, StoreError> {
        let row = Row {
            subject: code.subject.clone(),
            code_hash: Some(code.code_hash.clone()),
            code_expires_at: code.expires_at.as_millis(),
            attempts_left: i32::try_from(code.attempts).unwrap_or(i32::MAX),
            code_sent_at: code.sent_at.as_millis(),
            locked_until: None,
            token_hash: None,
            token_expires_at: None,
            ceremony: None,
            passkey: None,
            passkey_counter: 0,
            context_hash: None,
        };
        let stored = self
            .db
            .write(move |conn| {
                // One statement: the existing row is replaced only when its code is old enough
                // and it is not locked, so of concurrent issuers at most one stores (and sends).
                let upsert = diesel::insert_into(rows::table)
                    .values(&row)
                    .on_conflict(rows::subject)
                    .do_update()
                    .set((
                        rows::code_hash.eq(excluded(rows::code_hash)),
                        rows::code_expires_at.eq(excluded(rows::code_expires_at)),
                        rows::attempts_left.eq(excluded(rows::attempts_left)),
                        rows::code_sent_at.eq(excluded(rows::code_sent_at)),
                        rows::locked_until.eq(None::<i64>),
                        rows::token_hash.eq(None::<String>),
                        rows::token_expires_at.eq(None::<i64>),
                        rows::ceremony.eq(None::<String>),
                        rows::passkey.eq(None::<String>),
                        rows::passkey_counter.eq(0),
                        rows::context_hash.eq(None::<String>),
                    ));
                // `ON CONFLICT … DO UPDATE … WHERE`: the filter applies to the existing row.
                let only_if_allowed = diesel::query_dsl::methods::FilterDsl::filter(
                    upsert,
                    rows::code_sent_at.le(resend_cutoff.as_millis()).and(
                        rows::locked_until
                            .is_null()
                            .or(rows::locked_until.le(now.as_millis())),
                    ),
                );
                crate::with_conn!(conn, |c| only_if_allowed.execute(c)).map_err(DbError::from)
            })
            .await
            .map_err(unavailable)?;
        if stored > 0 {
            return Ok(Issued::Stored);
        }
        // Refused by the statement above; the row says why (for the message only).
        Ok(match self.row(&code.subject).await? {
            Some(existing) => match existing.locked_until.filter(|until| *until > now) {
                Some(until) => Issued::Locked { until },
                None => Issued::TooSoon {
                    last_sent_at: existing.code_sent_at,
                },
            },
            None => Issued::TooSoon { last_sent_at: now },
        })
    }

    async fn take_attempt(
        &self,
        subject: &str,
        now: Timestamp,
        lock_until: Timestamp,
    ) -> Result<Taken, StoreError> {
        let key = subject.to_owned();
        let taken = self
            .db
            .write(move |mut conn| {
                // The attempt is taken before the code is compared: one conditional decrement.
                let taken = crate::with_conn!(conn.reborrow(), |c| diesel::update(
                    rows::table
                        .find(&key)
                        .filter(rows::code_hash.is_not_null())
                        .filter(rows::attempts_left.gt(0))
                        .filter(rows::code_expires_at.gt(now.as_millis()))
                        .filter(
                            rows::locked_until
                                .is_null()
                                .or(rows::locked_until.le(now.as_millis()))
                        ),
                )
                .set(rows::attempts_left.eq(rows::attempts_left - 1))
                .returning((rows::code_hash, rows::attempts_left))
                .get_result::<(Option<String>, i32)>(c)
                .optional())?;
                // The take that used the last attempt locks, in the same transaction.
                if let Some((_, 0)) = taken {
                    crate::with_conn!(conn, |c| diesel::update(rows::table.find(&key))
                        .set(rows::locked_until.eq(lock_until.as_millis()))
                        .execute(c))?;
                }
                Ok(taken)
            })
            .await
            .map_err(unavailable)?;
        if let Some((Some(code_hash), attempts_left)) = taken {
            return Ok(Taken::Code {
                code_hash,
                attempts_left: u32::try_from(attempts_left).unwrap_or(0),
            });
        }
        Ok(
            match self
                .row(subject)
                .await?
                .and_then(|row| row.locked_until)
                .filter(|until| *until > now)
            {
                Some(until) => Taken::Locked { until },
                None => Taken::NoCode,
            },
        )
    }

    async fn confirm(
        &self,
        subject: &str,
        code_hash: &str,
        token_hash: &str,
        token_expires_at: Timestamp,
    ) -> Result<bool, StoreError> {
        let (subject, code_hash, token_hash) = (
            subject.to_owned(),
            code_hash.to_owned(),
            token_hash.to_owned(),
        );
        let changed = update_rows!(
            self.db,
            rows::table
                .find(&subject)
                .filter(rows::code_hash.eq(&code_hash)),
            (
                rows::code_hash.eq(None::<String>),
                rows::locked_until.eq(None::<i64>),
                rows::token_hash.eq(Some(&token_hash)),
                rows::token_expires_at.eq(Some(token_expires_at.as_millis())),
            )
        )
        .await
        .map_err(unavailable)?;
        Ok(changed == 1)
    }

    async fn find(&self, subject: &str) -> Result<Option<Confirmation>, StoreError> {
        self.row(subject).await
    }

    async fn save_ceremony(
        &self,
        subject: &str,
        token_hash: &str,
        now: Timestamp,
        step: &CeremonyStep,
    ) -> Result<bool, StoreError> {
        let (subject, token_hash, step) = (subject.to_owned(), token_hash.to_owned(), step.clone());
        let changed = update_rows!(
            self.db,
            rows::table
                .find(&subject)
                .filter(rows::token_hash.eq(&token_hash))
                .filter(rows::token_expires_at.gt(now.as_millis())),
            (
                rows::ceremony.eq(Some(&step.ceremony)),
                rows::passkey.eq(step.passkey.as_ref()),
                rows::passkey_counter.eq(i64::from(step.passkey_counter)),
                rows::context_hash.eq(step.context_hash.as_ref()),
            )
        )
        .await
        .map_err(unavailable)?;
        Ok(changed == 1)
    }

    async fn consume(&self, subject: &str, token_hash: &str) -> Result<bool, StoreError> {
        let (subject, token_hash) = (subject.to_owned(), token_hash.to_owned());
        let deleted = delete_rows!(
            self.db,
            rows::table
                .find(&subject)
                .filter(rows::token_hash.eq(&token_hash))
        )
        .await
        .map_err(unavailable)?;
        Ok(deleted == 1)
    }

    async fn forget_before(&self, before: Timestamp) -> Result<u64, StoreError> {
        let before = before.as_millis();
        let forgotten = rows::table
            .filter(rows::code_expires_at.lt(before))
            .filter(
                rows::token_expires_at
                    .is_null()
                    .or(rows::token_expires_at.lt(before)),
            )
            .filter(
                rows::locked_until
                    .is_null()
                    .or(rows::locked_until.lt(before)),
            );
        counted(delete_rows!(self.db, forgotten), unavailable).await
    }
}
