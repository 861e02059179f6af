//! Issued chip (active-authentication) challenges on diesel. A take is one `DELETE … RETURNING`:
//! the database decides which of concurrent takes removed the row, so exactly one gets it.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::ApplicationId;
use idconsent_verification::chip::{
    CHALLENGE_LEN, ChallengeStoreError, ChipChallenge, ChipChallengeStore,
};

use crate::db::Db;
use crate::error::DbError;
use crate::repo::duplicate_or;

pub mod schema {
    diesel::table! {
        chip_challenges (application_id, challenge) {
            application_id -> Text,
            /// Lowercase hex of the 8 bytes.
            challenge -> Text,
            issued_at -> BigInt,
            expires_at -> BigInt,
        }
    }
}

use schema::chip_challenges as challenges;

#[derive(Debug, Clone)]
pub struct DieselChipChallengeStore {
    db: Db,
}

impl DieselChipChallengeStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unavailable(error: DbError) -> ChallengeStoreError {
    ChallengeStoreError::Unavailable(Box::new(error))
}

#[async_trait]
impl ChipChallengeStore for DieselChipChallengeStore {
    async fn issue(&self, challenge: &ChipChallenge) -> Result<(), ChallengeStoreError> {
        let application = challenge.application().as_str().to_owned();
        let bytes = hex(challenge.bytes());
        let (issued_at, expires_at) = (
            challenge.issued_at().as_millis(),
            challenge.expires_at().as_millis(),
        );
        self.db
            .write(move |conn| {
                crate::with_conn!(conn, |c| {
                    diesel::delete(challenges::table.filter(challenges::expires_at.le(issued_at)))
                        .execute(c)?;
                    diesel::insert_into(challenges::table)
                        .values((
                            challenges::application_id.eq(&application),
                            challenges::challenge.eq(&bytes),
                            challenges::issued_at.eq(issued_at),
                            challenges::expires_at.eq(expires_at),
                        ))
                        .execute(c)
                })?;
                Ok(())
            })
            .await
            .map_err(duplicate_or(ChallengeStoreError::Duplicate, unavailable))
    }

    async fn take(
        &self,
        application: &ApplicationId,
        bytes: &[u8; CHALLENGE_LEN],
        now: Timestamp,
    ) -> Result<Option<ChipChallenge>, ChallengeStoreError> {
        let owner = application.as_str().to_owned();
        let key = hex(bytes);
        let taken: Option<(i64, i64)> = self
            .db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| diesel::delete(
                    challenges::table
                        .filter(challenges::application_id.eq(&owner))
                        .filter(challenges::challenge.eq(&key))
                )
                .returning((challenges::issued_at, challenges::expires_at))
                .get_result::<(i64, i64)>(c)
                .optional())?)
            })
            .await
            .map_err(unavailable)?;
        Ok(taken
            .map(|(issued_at, expires_at)| {
                ChipChallenge::restore(
                    application.clone(),
                    *bytes,
                    Timestamp::from_millis(issued_at),
                    Timestamp::from_millis(expires_at),
                )
            })
            .filter(|challenge| now < challenge.expires_at()))
    }
}
