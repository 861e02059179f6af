//! `ChallengeRepository`: FIDO challenges, each used once, and the spending of an assertion
//! (challenge and device counter in one transaction).

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_enduser::ports::{AssertionInputs, ChallengeRepository, Spent, StoreError};
use idconsent_enduser::{Challenge, Purpose, PurposeKind};
use idconsent_kernel::id::{ChallengeId, DeviceId, EnrollmentId, TypedId};
use idconsent_kernel::{PhoneNumber, Timestamp};

use super::devices::{DeviceRow, record_use};
use super::enrollments::UserRow;
use super::{DieselEndUserStore, corrupt, unavailable};
use crate::error::DbError;
use crate::repo::{delete_rows, find_row, found, insert_row, read_with, write_with};
use crate::schema::{devices, end_users, fido_challenges};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = fido_challenges)]
struct ChallengeRow {
    id: String,
    purpose_type: String,
    purpose_id: Option<String>,
    phone: String,
    enrollment_id: Option<String>,
    state: String,
    context_hash: Option<String>,
    expires_at: i64,
    used_at: Option<i64>,
    created_at: i64,
}

impl ChallengeRow {
    fn from_challenge(c: &Challenge) -> Self {
        Self {
            id: c.id.as_str().to_owned(),
            purpose_type: c.purpose.kind.as_str().to_owned(),
            purpose_id: c.purpose.id.clone(),
            phone: c.phone.as_str().to_owned(),
            enrollment_id: c.enrollment_id.as_ref().map(|e| e.as_str().to_owned()),
            state: c.state.clone(),
            context_hash: c.context_hash.clone(),
            expires_at: c.expires_at.as_millis(),
            used_at: c.used_at.map(Timestamp::as_millis),
            created_at: c.created_at.as_millis(),
        }
    }

    fn into_challenge(self) -> Result<Challenge, StoreError> {
        let bad = |column: &str| corrupt("fido_challenges", column, &self.id);
        Ok(Challenge {
            purpose: Purpose {
                kind: PurposeKind::named(&self.purpose_type).map_err(|_| bad("purpose_type"))?,
                id: self.purpose_id,
            },
            phone: PhoneNumber::parse(&self.phone).map_err(|_| bad("phone"))?,
            id: ChallengeId::from_trusted(self.id),
            enrollment_id: self.enrollment_id.map(EnrollmentId::from_trusted),
            state: self.state,
            context_hash: self.context_hash,
            expires_at: Timestamp::from_millis(self.expires_at),
            used_at: self.used_at.map(Timestamp::from_millis),
            created_at: Timestamp::from_millis(self.created_at),
        })
    }
}

const CHALLENGE_UNUSABLE: &str = "challenge used, expired or unknown";
const DEVICE_REFUSED: &str = "device inactive or counter not advanced";

/// Marks challenge `$id` used at `$at` if it is unused and unexpired: rows changed, 0 or 1.
macro_rules! consume_challenge {
    ($c:expr, $id:expr, $at:expr) => {
        diesel::update(
            fido_challenges::table
                .find($id)
                .filter(fido_challenges::used_at.is_null())
                .filter(fido_challenges::expires_at.gt($at.as_millis())),
        )
        .set(fido_challenges::used_at.eq(Some($at.as_millis())))
        .execute($c)
    };
}

#[async_trait]
impl ChallengeRepository for DieselEndUserStore {
    async fn insert(&self, challenge: &Challenge) -> Result<(), StoreError> {
        let row = ChallengeRow::from_challenge(challenge);
        insert_row!(self.db, fido_challenges::table, row)
            .await
            .map_err(unavailable)
    }

    async fn find(&self, id: &ChallengeId) -> Result<Option<Challenge>, StoreError> {
        let key = id.as_str().to_owned();
        let row = find_row!(self.db, fido_challenges::table, key, ChallengeRow);
        found(row, unavailable, ChallengeRow::into_challenge).await
    }

    async fn consume(&self, id: &ChallengeId, at: Timestamp) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let consumed = write_with!(self.db, |c| consume_challenge!(c, &id, at))
            .await
            .map_err(unavailable)?;
        Ok(consumed == 1)
    }

    async fn read_assertion(
        &self,
        challenge: &ChallengeId,
        credential_id: Option<&str>,
    ) -> Result<AssertionInputs, StoreError> {
        let challenge = challenge.as_str().to_owned();
        let credential_id = credential_id.map(str::to_owned);
        let (challenge, device, user) = read_with!(self.db, |c| {
            let challenge = fido_challenges::table
                .find(challenge)
                .select(ChallengeRow::as_select())
                .get_result(c)
                .optional()?;
            let device = match credential_id {
                Some(credential_id) => devices::table
                    .filter(devices::credential_id.eq(credential_id))
                    .select(DeviceRow::as_select())
                    .get_result(c)
                    .optional()?,
                None => None,
            };
            let user = match &device {
                Some(device) => end_users::table
                    .find(&device.user_id)
                    .select(UserRow::as_select())
                    .get_result(c)
                    .optional()?,
                None => None,
            };
            Ok::<_, diesel::result::Error>((challenge, device, user))
        })
        .await
        .map_err(unavailable)?;
        Ok(AssertionInputs {
            challenge: challenge.map(ChallengeRow::into_challenge).transpose()?,
            device: device.map(DeviceRow::into_device).transpose()?,
            user: user.map(UserRow::into_user).transpose()?,
        })
    }

    async fn spend_assertion(
        &self,
        challenge: &ChallengeId,
        device: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<Spent, StoreError> {
        let challenge = challenge.as_str().to_owned();
        let device = device.as_str().to_owned();
        let written = write_with!(self.db, |c| {
            if consume_challenge!(c, &challenge, at)? != 1 {
                return Err(DbError::Rollback(CHALLENGE_UNUSABLE));
            }
            if record_use!(c, &device, counter, at)? != 1 {
                return Err(DbError::Rollback(DEVICE_REFUSED));
            }
            Ok::<_, DbError>(())
        })
        .await;
        match written {
            Ok(()) => Ok(Spent::Spent),
            Err(error) => match error.rollback_tag() {
                Some(CHALLENGE_UNUSABLE) => Ok(Spent::ChallengeUnusable),
                Some(DEVICE_REFUSED) => Ok(Spent::DeviceRefused),
                _ => Err(unavailable(error)),
            },
        }
    }

    async fn forget_expired(&self, before: Timestamp) -> Result<usize, StoreError> {
        delete_rows!(
            self.db,
            fido_challenges::table.filter(fido_challenges::expires_at.lt(before.as_millis()))
        )
        .await
        .map_err(unavailable)
    }
}
