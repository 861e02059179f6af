//! `CodeRepository`: one-time codes and link tokens, by purpose and subject.

use async_trait::async_trait;
use diesel::prelude::*;
use diesel::upsert::excluded;
use idconsent_kernel::Timestamp;
use idconsent_merchant::ports::{CodePurpose, CodeRepository, OneTimeCode, RepositoryError};

use super::{DieselMerchantStore, corrupt, repository_error};
use crate::error::DbError;
use crate::repo::{delete_rows, find_row, find_where, found, write_with};
use crate::schema::one_time_codes;

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = one_time_codes)]
struct CodeRow {
    purpose: String,
    subject: String,
    code_hash: String,
    expires_at: i64,
    attempts_left: i32,
    created_at: i64,
}

impl CodeRow {
    fn from_code(code: &OneTimeCode) -> Self {
        Self {
            purpose: code.purpose.as_str().to_owned(),
            subject: code.subject.clone(),
            code_hash: code.code_hash.clone(),
            expires_at: code.expires_at.as_millis(),
            attempts_left: i32::try_from(code.attempts_left).unwrap_or(i32::MAX),
            created_at: code.created_at.as_millis(),
        }
    }

    fn into_code(self) -> Result<OneTimeCode, RepositoryError> {
        let corrupt = |what: &str| corrupt(format!("one_time_codes.{what} of {}", self.subject));
        Ok(OneTimeCode {
            purpose: CodePurpose::parse(&self.purpose).ok_or_else(|| corrupt("purpose"))?,
            attempts_left: u32::try_from(self.attempts_left)
                .map_err(|_| corrupt("attempts_left"))?,
            subject: self.subject,
            code_hash: self.code_hash,
            expires_at: Timestamp::from_millis(self.expires_at),
            created_at: Timestamp::from_millis(self.created_at),
        })
    }
}

/// `INSERT` of `$row` that replaces the code of the same purpose and subject: hash, expiry,
/// attempts and creation time become the new code's.
macro_rules! upsert_code {
    ($row:expr) => {
        diesel::insert_into(one_time_codes::table)
            .values($row)
            .on_conflict((one_time_codes::purpose, one_time_codes::subject))
            .do_update()
            .set((
                one_time_codes::code_hash.eq(excluded(one_time_codes::code_hash)),
                one_time_codes::expires_at.eq(excluded(one_time_codes::expires_at)),
                one_time_codes::attempts_left.eq(excluded(one_time_codes::attempts_left)),
                one_time_codes::created_at.eq(excluded(one_time_codes::created_at)),
            ))
    };
}

#[async_trait]
impl CodeRepository for DieselMerchantStore {
    async fn put(&self, code: &OneTimeCode) -> Result<(), RepositoryError> {
        let row = CodeRow::from_code(code);
        write_with!(self.db, |c| upsert_code!(&row).execute(c))
            .await
            .map_err(repository_error)?;
        Ok(())
    }

    async fn find(
        &self,
        purpose: CodePurpose,
        subject: &str,
    ) -> Result<Option<OneTimeCode>, RepositoryError> {
        let key = (purpose.as_str(), subject.to_owned());
        let row = find_row!(self.db, one_time_codes::table, key, CodeRow);
        found(row, repository_error, CodeRow::into_code).await
    }

    async fn find_by_hash(
        &self,
        purpose: CodePurpose,
        code_hash: &str,
    ) -> Result<Option<OneTimeCode>, RepositoryError> {
        let code_hash = code_hash.to_owned();
        let row = find_where!(
            self.db,
            one_time_codes::table
                .filter(one_time_codes::purpose.eq(purpose.as_str()))
                .filter(one_time_codes::code_hash.eq(code_hash)),
            CodeRow
        );
        found(row, repository_error, CodeRow::into_code).await
    }

    async fn put_unless_newer(
        &self,
        code: &OneTimeCode,
        cutoff: Timestamp,
    ) -> Result<bool, RepositoryError> {
        let row = CodeRow::from_code(code);
        let stored = self
            .db
            .write(move |conn| {
                // One statement: the replacement happens only where the existing code is old
                // enough, so of concurrent resends exactly one stores (and sends).
                let upsert = upsert_code!(&row);
                // `ON CONFLICT … DO UPDATE … WHERE`: the filter applies to the existing row.
                let only_if_old = diesel::query_dsl::methods::FilterDsl::filter(
                    upsert,
                    one_time_codes::created_at.le(cutoff.as_millis()),
                );
                with_conn!(conn, |c| only_if_old.execute(c)).map_err(DbError::from)
            })
            .await
            .map_err(repository_error)?;
        Ok(stored > 0)
    }

    async fn take_attempt(
        &self,
        purpose: CodePurpose,
        subject: &str,
        now: Timestamp,
    ) -> Result<Option<OneTimeCode>, RepositoryError> {
        let subject = subject.to_owned();
        // The attempt is taken before the code is compared: one conditional decrement.
        let row = write_with!(self.db, |c| diesel::update(
            one_time_codes::table
                .find((purpose.as_str(), subject.as_str()))
                .filter(one_time_codes::attempts_left.gt(0))
                .filter(one_time_codes::expires_at.gt(now.as_millis())),
        )
        .set(one_time_codes::attempts_left.eq(one_time_codes::attempts_left - 1))
        .returning(CodeRow::as_returning())
        .get_result::<CodeRow>(c)
        .optional());
        found(row, repository_error, CodeRow::into_code).await
    }

    async fn consume(&self, purpose: CodePurpose, subject: &str) -> Result<bool, RepositoryError> {
        let subject = subject.to_owned();
        let deleted = delete_rows!(
            self.db,
            one_time_codes::table.find((purpose.as_str(), subject))
        )
        .await
        .map_err(repository_error)?;
        Ok(deleted > 0)
    }
}
