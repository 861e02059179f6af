//! `RefreshTokenRepository`: refresh tokens in families, rotated once each; a reused token
//! revokes its whole family.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_enduser::RefreshToken;
use idconsent_enduser::ports::{NextToken, RefreshTokenRepository, Rotation, StoreError};
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{DeviceId, EndUserId, RefreshFamilyId, TypedId};

use super::{DieselEndUserStore, unavailable};
use crate::error::DbError;
use crate::repo::{insert_row, read_with, write_with};
use crate::schema::refresh_tokens;

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = refresh_tokens)]
struct RefreshRow {
    hash: String,
    family: String,
    user_id: String,
    device_id: String,
    installation: String,
    expires_at: i64,
    used_at: Option<i64>,
    revoked_at: Option<i64>,
    created_at: i64,
}

impl RefreshRow {
    fn from_token(t: &RefreshToken) -> Self {
        Self {
            hash: t.hash.clone(),
            family: t.family.as_str().to_owned(),
            user_id: t.user_id.as_str().to_owned(),
            device_id: t.device_id.as_str().to_owned(),
            installation: t.installation.clone(),
            expires_at: t.expires_at.as_millis(),
            used_at: t.used_at.map(Timestamp::as_millis),
            revoked_at: t.revoked_at.map(Timestamp::as_millis),
            created_at: t.created_at.as_millis(),
        }
    }

    fn into_token(self) -> RefreshToken {
        RefreshToken {
            hash: self.hash,
            family: RefreshFamilyId::from_trusted(self.family),
            user_id: EndUserId::from_trusted(self.user_id),
            device_id: DeviceId::from_trusted(self.device_id),
            installation: self.installation,
            expires_at: Timestamp::from_millis(self.expires_at),
            used_at: self.used_at.map(Timestamp::from_millis),
            revoked_at: self.revoked_at.map(Timestamp::from_millis),
            created_at: Timestamp::from_millis(self.created_at),
        }
    }
}

#[async_trait]
impl RefreshTokenRepository for DieselEndUserStore {
    async fn insert(&self, token: &RefreshToken) -> Result<(), StoreError> {
        let row = RefreshRow::from_token(token);
        insert_row!(self.db, refresh_tokens::table, row)
            .await
            .map_err(unavailable)
    }

    async fn rotate(
        &self,
        presented_hash: &str,
        next: &NextToken,
        at: Timestamp,
    ) -> Result<Rotation, StoreError> {
        let presented = presented_hash.to_owned();
        let next = next.clone();
        write_with!(self.db, |c| {
            let now = at.as_millis();
            // Marking it used is the compare-and-set: of concurrent rotations one wins.
            let won = diesel::update(
                refresh_tokens::table
                    .find(&presented)
                    .filter(refresh_tokens::used_at.is_null())
                    .filter(refresh_tokens::revoked_at.is_null())
                    .filter(refresh_tokens::expires_at.gt(now))
                    .filter(refresh_tokens::installation.eq(&next.installation)),
            )
            .set(refresh_tokens::used_at.eq(Some(now)))
            .execute(c)?
                == 1;
            let Some(stored) = refresh_tokens::table
                .find(&presented)
                .select(RefreshRow::as_select())
                .get_result(c)
                .optional()?
            else {
                return Ok(Rotation::Invalid);
            };
            if won {
                let successor = RefreshRow {
                    hash: next.hash.clone(),
                    family: stored.family.clone(),
                    user_id: stored.user_id.clone(),
                    device_id: stored.device_id.clone(),
                    installation: stored.installation.clone(),
                    expires_at: next.expires_at.as_millis(),
                    used_at: None,
                    revoked_at: None,
                    created_at: now,
                };
                diesel::insert_into(refresh_tokens::table)
                    .values(&successor)
                    .execute(c)?;
                return Ok(Rotation::Rotated(successor.into_token()));
            }
            if stored.used_at.is_some() {
                // Reuse: someone holds a copy. End the whole sign-in.
                diesel::update(
                    refresh_tokens::table
                        .filter(refresh_tokens::family.eq(&stored.family))
                        .filter(refresh_tokens::revoked_at.is_null()),
                )
                .set(refresh_tokens::revoked_at.eq(Some(now)))
                .execute(c)?;
                return Ok(Rotation::Reused(RefreshFamilyId::from_trusted(
                    stored.family,
                )));
            }
            Ok::<_, DbError>(Rotation::Invalid)
        })
        .await
        .map_err(unavailable)
    }

    async fn family_revoked(&self, family: &RefreshFamilyId) -> Result<bool, StoreError> {
        let revoked = refresh_tokens::table
            .filter(refresh_tokens::family.eq(family.as_str().to_owned()))
            .filter(refresh_tokens::revoked_at.is_not_null());
        read_with!(self.db, |c| diesel::select(diesel::dsl::exists(revoked))
            .get_result::<bool>(c))
        .await
        .map_err(unavailable)
    }
}
