//! `EnrollmentRepository`: enrollments from the first OTP to a registered device, and the end
//! users they create.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_enduser::ports::{Admitted, EnrollmentRepository, StoreError};
use idconsent_enduser::{EndUser, Enrollment, EnrollmentStatus};
use idconsent_kernel::id::{DeviceId, EndUserId, EnrollmentId, TypedId};
use idconsent_kernel::{PhoneNumber, Timestamp};
use idconsent_webhook::{Effects, Outbox};

use super::{DieselEndUserStore, audience_columns, audience_from, corrupt, unavailable};
use crate::db::AnyConnection;
use crate::error::DbError;
use crate::repo::{
    advisory_lock, find_row, find_where, found, insert_row, update_rows, update_with_effects,
    write_with,
};
use crate::schema::{end_users, enrollments};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = end_users)]
pub(super) struct UserRow {
    id: String,
    phone: String,
    handle: String,
    name: Option<String>,
    enrolled_at: Option<i64>,
    created_at: i64,
}

impl UserRow {
    fn from_user(user: &EndUser) -> Self {
        Self {
            id: user.id.as_str().to_owned(),
            phone: user.phone.as_str().to_owned(),
            handle: user.handle.clone(),
            name: user.name.clone(),
            enrolled_at: user.enrolled_at.map(Timestamp::as_millis),
            created_at: user.created_at.as_millis(),
        }
    }

    pub(super) fn into_user(self) -> Result<EndUser, StoreError> {
        Ok(EndUser {
            phone: PhoneNumber::parse(&self.phone)
                .map_err(|_| corrupt("end_users", "phone", &self.id))?,
            id: EndUserId::from_trusted(self.id),
            handle: self.handle,
            name: self.name,
            enrolled_at: self.enrolled_at.map(Timestamp::from_millis),
            created_at: Timestamp::from_millis(self.created_at),
        })
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = enrollments)]
struct EnrollmentRow {
    id: String,
    phone: String,
    name: Option<String>,
    device_name: Option<String>,
    platform: Option<String>,
    installation: String,
    application_id: Option<String>,
    environment: Option<String>,
    callback_url: Option<String>,
    status: String,
    otp_hash: String,
    otp_attempts_left: i32,
    otp_expires_at: i64,
    device_id: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl EnrollmentRow {
    fn from_enrollment(e: &Enrollment) -> Self {
        let (application_id, environment, callback_url) = audience_columns(e.audience.as_ref());
        Self {
            id: e.id.as_str().to_owned(),
            phone: e.phone.as_str().to_owned(),
            name: e.name.clone(),
            device_name: e.device_name.clone(),
            platform: e.platform.clone(),
            installation: e.installation.clone(),
            application_id,
            environment,
            callback_url,
            status: e.status.as_str().to_owned(),
            otp_hash: e.otp_hash.clone(),
            otp_attempts_left: i32::try_from(e.otp_attempts_left).unwrap_or(i32::MAX),
            otp_expires_at: e.otp_expires_at.as_millis(),
            device_id: e.device_id.as_ref().map(|d| d.as_str().to_owned()),
            created_at: e.created_at.as_millis(),
            updated_at: e.updated_at.as_millis(),
        }
    }

    fn into_enrollment(self) -> Result<Enrollment, StoreError> {
        let bad = |column: &str| corrupt("enrollments", column, &self.id);
        Ok(Enrollment {
            phone: PhoneNumber::parse(&self.phone).map_err(|_| bad("phone"))?,
            status: EnrollmentStatus::parse(&self.status).ok_or_else(|| bad("status"))?,
            otp_attempts_left: u32::try_from(self.otp_attempts_left).unwrap_or(0),
            audience: audience_from(self.application_id, self.environment, self.callback_url),
            id: EnrollmentId::from_trusted(self.id),
            name: self.name,
            device_name: self.device_name,
            platform: self.platform,
            installation: self.installation,
            otp_hash: self.otp_hash,
            otp_expires_at: Timestamp::from_millis(self.otp_expires_at),
            device_id: self.device_id.map(DeviceId::from_trusted),
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

/// On PostgreSQL, serialises the enrollments of one phone, so that their count is a limit;
/// SQLite's single writer already does.
fn lock_phone(conn: AnyConnection<'_>, phone: &str) -> Result<(), DbError> {
    advisory_lock(conn, &format!("enrollments:{phone}"))
}

#[async_trait]
impl EnrollmentRepository for DieselEndUserStore {
    async fn insert(&self, enrollment: &Enrollment) -> Result<(), StoreError> {
        let row = EnrollmentRow::from_enrollment(enrollment);
        insert_row!(self.db, enrollments::table, row)
            .await
            .map_err(unavailable)
    }

    async fn find(&self, id: &EnrollmentId) -> Result<Option<Enrollment>, StoreError> {
        let row = find_row!(
            self.db,
            enrollments::table,
            id.as_str().to_owned(),
            EnrollmentRow
        );
        found(row, unavailable, EnrollmentRow::into_enrollment).await
    }

    async fn insert_within(
        &self,
        enrollment: &Enrollment,
        max: u32,
        window: std::time::Duration,
    ) -> Result<Admitted, StoreError> {
        let row = EnrollmentRow::from_enrollment(enrollment);
        let since = enrollment.created_at.minus(window).as_millis();
        self.db
            .write(move |mut conn| {
                lock_phone(conn.reborrow(), &row.phone)?;
                crate::with_conn!(conn, |c| {
                    let recent: Vec<i64> = enrollments::table
                        .filter(enrollments::phone.eq(&row.phone))
                        .filter(enrollments::created_at.gt(since))
                        .order(enrollments::created_at.asc())
                        .limit(i64::from(max))
                        .select(enrollments::created_at)
                        .load(c)?;
                    if recent.len() >= max as usize {
                        let oldest = recent.first().copied().unwrap_or(row.created_at);
                        return Ok(Admitted::Refused {
                            retry_at: Timestamp::from_millis(oldest).plus(window),
                        });
                    }
                    diesel::insert_into(enrollments::table)
                        .values(&row)
                        .execute(c)?;
                    Ok(Admitted::Inserted)
                })
            })
            .await
            .map_err(unavailable)
    }

    async fn take_otp_attempt(
        &self,
        id: &EnrollmentId,
        at: Timestamp,
    ) -> Result<Option<Enrollment>, StoreError> {
        let id = id.as_str().to_owned();
        let row = write_with!(self.db, |c| {
            let taken = diesel::update(
                enrollments::table
                    .find(&id)
                    .filter(enrollments::status.eq(EnrollmentStatus::PendingOtp.as_str()))
                    .filter(enrollments::otp_attempts_left.gt(0)),
            )
            .set((
                enrollments::otp_attempts_left.eq(enrollments::otp_attempts_left - 1),
                enrollments::updated_at.eq(at.as_millis()),
            ))
            .execute(c)?;
            if taken == 0 {
                return Ok(None);
            }
            enrollments::table
                .find(&id)
                .select(EnrollmentRow::as_select())
                .get_result(c)
                .optional()
        });
        found(row, unavailable, EnrollmentRow::into_enrollment).await
    }

    async fn fail(&self, id: &EnrollmentId, at: Timestamp) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let failed = update_rows!(
            self.db,
            enrollments::table
                .find(&id)
                .filter(enrollments::status.eq(EnrollmentStatus::PendingOtp.as_str())),
            (
                enrollments::status.eq(EnrollmentStatus::Failed.as_str()),
                enrollments::updated_at.eq(at.as_millis()),
            )
        )
        .await
        .map_err(unavailable)?;
        Ok(failed == 1)
    }

    async fn ensure_user(&self, candidate: &EndUser) -> Result<EndUser, StoreError> {
        let row = UserRow::from_user(candidate);
        let stored = write_with!(self.db, |c| {
            let existing = end_users::table
                .filter(end_users::phone.eq(&row.phone))
                .select(UserRow::as_select())
                .get_result(c)
                .optional()?;
            match existing {
                Some(user) => Ok(user),
                None => {
                    diesel::insert_into(end_users::table)
                        .values(&row)
                        .execute(c)?;
                    end_users::table
                        .find(&row.id)
                        .select(UserRow::as_select())
                        .get_result(c)
                }
            }
        })
        .await;
        match stored {
            Ok(row) => row.into_user(),
            // A concurrent enrollment of the same phone inserted first: theirs is ours.
            Err(error) if error.is_unique_violation() => self
                .user_by_phone(&candidate.phone)
                .await?
                .ok_or(StoreError::NotFound),
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn user_by_phone(&self, phone: &PhoneNumber) -> Result<Option<EndUser>, StoreError> {
        let phone = phone.as_str().to_owned();
        let row = find_where!(
            self.db,
            end_users::table.filter(end_users::phone.eq(phone)),
            UserRow
        );
        found(row, unavailable, UserRow::into_user).await
    }

    async fn user(&self, id: &EndUserId) -> Result<Option<EndUser>, StoreError> {
        let row = find_row!(self.db, end_users::table, id.as_str().to_owned(), UserRow);
        found(row, unavailable, UserRow::into_user).await
    }

    async fn complete(
        &self,
        id: &EnrollmentId,
        user: &EndUserId,
        at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let user = user.as_str().to_owned();
        let events = Effects::events(outbox.to_vec());
        update_with_effects!(self.db, events, |c| {
            let changed = diesel::update(
                enrollments::table
                    .find(&id)
                    .filter(enrollments::status.eq(EnrollmentStatus::PasskeyRegistered.as_str())),
            )
            .set((
                enrollments::status.eq(EnrollmentStatus::Completed.as_str()),
                enrollments::updated_at.eq(at.as_millis()),
            ))
            .execute(c)?;
            if changed == 1 {
                diesel::update(
                    end_users::table
                        .find(&user)
                        .filter(end_users::enrolled_at.is_null()),
                )
                .set(end_users::enrolled_at.eq(Some(at.as_millis())))
                .execute(c)?;
            }
            Ok::<_, DbError>(changed)
        })
        .await
        .map_err(unavailable)
    }
}
