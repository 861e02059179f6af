//! `ConfirmationStore` on diesel: one row per hosted-page subject; every limit is a conditional
//! statement on that row, or a read of it under lock judged by the domain and written back in
//! the same transaction (a guess, ADR 0018).

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::upsert::excluded;
use idconsent_hosted::guesses::{decode_guesses, encode_guesses, give_back};
use idconsent_hosted::{
    CeremonyStep, Confirmation, ConfirmationStore, GuessPolicy, GuessState, Issued, NewCode,
    StoreError, Taken,
};
use idconsent_kernel::Timestamp;

use crate::db::{AnyConnection, Db};
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
            guesses -> Text,
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
    /// When the guesses still counted were taken: milliseconds, comma-separated.
    guesses: String,
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
            guesses: decode_guesses(&self.guesses),
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
            guesses: String::new(),
        };
        let stored = self
            .db
            .write(move |conn| {
                // One statement: the existing row is replaced only when its code is old enough
                // and it is not locked, so of concurrent issuers at most one stores (and sends).
                // Its guesses are not among what is replaced: a resend never restores them.
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
        policy: &GuessPolicy,
        now: Timestamp,
    ) -> Result<Taken, StoreError> {
        let (key, policy) = (subject.to_owned(), *policy);
        self.db
            .write(move |mut conn| {
                // The row is locked (PostgreSQL; SQLite has one writer) from the read to the
                // write: concurrent guesses are judged one after another, each before it is
                // compared.
                let Some(state) = guess_state(&mut conn, &key)? else {
                    return Ok(Taken::NoCode);
                };
                let (kept, taken) = policy.judge(&state, now);
                if let Some(kept) = kept {
                    crate::with_conn!(conn, |c| diesel::update(rows::table.find(&key))
                        .set((
                            rows::attempts_left.eq(i32::try_from(kept.attempts_left).unwrap_or(0)),
                            rows::locked_until.eq(kept.locked_until.map(Timestamp::as_millis)),
                            rows::guesses.eq(encode_guesses(&kept.guesses)),
                        ))
                        .execute(c))?;
                }
                Ok(taken)
            })
            .await
            .map_err(unavailable)
    }

    async fn confirm(
        &self,
        subject: &str,
        code_hash: &str,
        taken_at: Timestamp,
        token_hash: &str,
        token_expires_at: Timestamp,
    ) -> Result<bool, StoreError> {
        let (key, code_hash, token_hash) = (
            subject.to_owned(),
            code_hash.to_owned(),
            token_hash.to_owned(),
        );
        self.db
            .write(move |mut conn| {
                let Some(state) = guess_state(&mut conn, &key)? else {
                    return Ok(false);
                };
                // A code confirms once: the row is locked, and the code cleared below.
                if state.code_hash.as_deref() != Some(code_hash.as_str()) {
                    return Ok(false);
                }
                let mut guesses = state.guesses;
                give_back(&mut guesses, taken_at);
                crate::with_conn!(conn, |c| diesel::update(rows::table.find(&key))
                    .set((
                        rows::code_hash.eq(None::<String>),
                        rows::locked_until.eq(None::<i64>),
                        rows::token_hash.eq(Some(&token_hash)),
                        rows::token_expires_at.eq(Some(token_expires_at.as_millis())),
                        rows::guesses.eq(encode_guesses(&guesses)),
                    ))
                    .execute(c))?;
                Ok(true)
            })
            .await
            .map_err(unavailable)
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
        // The row stays: its guesses count on after the decision.
        let consumed = update_rows!(
            self.db,
            rows::table
                .find(&subject)
                .filter(rows::token_hash.eq(&token_hash)),
            (
                rows::code_hash.eq(None::<String>),
                rows::token_hash.eq(None::<String>),
                rows::token_expires_at.eq(None::<i64>),
                rows::ceremony.eq(None::<String>),
                rows::passkey.eq(None::<String>),
                rows::passkey_counter.eq(0),
                rows::context_hash.eq(None::<String>),
            )
        )
        .await
        .map_err(unavailable)?;
        Ok(consumed == 1)
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

/// What a guess is judged on, read under the row's lock (`FOR UPDATE` on PostgreSQL; SQLite's
/// single writer serialises).
fn guess_state(conn: &mut AnyConnection<'_>, key: &str) -> Result<Option<GuessState>, DbError> {
    let query = rows::table.find(key).select((
        rows::code_hash,
        rows::code_expires_at,
        rows::attempts_left,
        rows::locked_until,
        rows::guesses,
    ));
    type Read = (Option<String>, i64, i32, Option<i64>, String);
    let read = match conn {
        AnyConnection::Sqlite(c) => query.first::<Read>(&mut **c).optional()?,
        AnyConnection::Postgres(c) => query.for_update().first::<Read>(&mut **c).optional()?,
    };
    Ok(read.map(
        |(code_hash, code_expires_at, attempts_left, locked_until, guesses)| GuessState {
            code_hash,
            code_expires_at: Timestamp::from_millis(code_expires_at),
            attempts_left: u32::try_from(attempts_left).unwrap_or(0),
            locked_until: locked_until.map(Timestamp::from_millis),
            guesses: decode_guesses(&guesses),
        },
    ))
}
