//! `DeviceRepository`: end users' devices with their passkeys, registration against the
//! enrollment, status changes and recovery.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_enduser::ports::{DeviceRepository, StoreError};
use idconsent_enduser::{Device, DeviceStatus, EnrollmentStatus};
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{DeviceId, EndUserId, EnrollmentId, TypedId};
use idconsent_webhook::{Effects, Outbox};

use super::{DieselEndUserStore, audience_columns, audience_from, corrupt, unavailable};
use crate::db::AnyConnection;
use crate::error::DbError;
use crate::repo::{
    advisory_lock, find_row, find_where, found, load_rows, loaded, update_with_effects, write_with,
};
use crate::schema::{devices, enrollments, refresh_tokens};
use crate::webhook::write_outbox;

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = devices)]
pub(super) struct DeviceRow {
    id: String,
    pub(super) user_id: String,
    name: String,
    platform: String,
    installation: String,
    application_id: Option<String>,
    environment: Option<String>,
    callback_url: Option<String>,
    status: String,
    credential_id: String,
    passkey: String,
    created_at: i64,
    last_used_at: Option<i64>,
    sign_count: i64,
    recovery_ends_at: Option<i64>,
}

impl DeviceRow {
    fn from_device(d: &Device) -> Self {
        let (application_id, environment, callback_url) = audience_columns(d.audience.as_ref());
        Self {
            id: d.id.as_str().to_owned(),
            user_id: d.user_id.as_str().to_owned(),
            name: d.name.clone(),
            platform: d.platform.clone(),
            installation: d.installation.clone(),
            application_id,
            environment,
            callback_url,
            status: d.status.as_str().to_owned(),
            credential_id: d.credential_id.clone(),
            passkey: d.passkey.clone(),
            created_at: d.created_at.as_millis(),
            last_used_at: d.last_used_at.map(Timestamp::as_millis),
            sign_count: i64::from(d.counter),
            recovery_ends_at: d.recovery_ends_at.map(Timestamp::as_millis),
        }
    }

    pub(super) fn into_device(self) -> Result<Device, StoreError> {
        Ok(Device {
            status: DeviceStatus::parse(&self.status)
                .ok_or_else(|| corrupt("devices", "status", &self.id))?,
            counter: u32::try_from(self.sign_count)
                .map_err(|_| corrupt("devices", "sign_count", &self.id))?,
            audience: audience_from(self.application_id, self.environment, self.callback_url),
            id: DeviceId::from_trusted(self.id),
            user_id: EndUserId::from_trusted(self.user_id),
            name: self.name,
            platform: self.platform,
            installation: self.installation,
            credential_id: self.credential_id,
            passkey: self.passkey,
            created_at: Timestamp::from_millis(self.created_at),
            last_used_at: self.last_used_at.map(Timestamp::from_millis),
            recovery_ends_at: self.recovery_ends_at.map(Timestamp::from_millis),
        })
    }
}

const NOT_REGISTRABLE: &str = "enrollment not pending_otp";
const DUPLICATE_CREDENTIAL: &str = "credential registered";
const CHANGED: &str = "the user's devices changed";

/// On PostgreSQL, serialises the registrations of one user's devices, so that two cannot both
/// be judged on the same devices; SQLite's single writer already does.
fn lock_user(conn: AnyConnection<'_>, user_id: &str) -> Result<(), DbError> {
    advisory_lock(conn, &format!("devices:{user_id}"))
}

/// Stores the counter and `last_used_at` of active device `$id` if the counter advances (or
/// stays 0 on both sides): the number of rows changed, 0 or 1. Used inside a `with_conn!` body.
macro_rules! record_use {
    ($c:expr, $id:expr, $counter:expr, $at:expr) => {{
        use $crate::schema::devices;
        let active = devices::table
            .find($id)
            .filter(devices::status.eq(idconsent_enduser::DeviceStatus::Active.as_str()));
        let counter = i64::from($counter);
        let set = (
            devices::sign_count.eq(counter),
            devices::last_used_at.eq(Some($at.as_millis())),
        );
        if counter == 0 {
            diesel::update(active.filter(devices::sign_count.eq(0_i64)))
                .set(set)
                .execute($c)
        } else {
            diesel::update(active.filter(devices::sign_count.lt(counter)))
                .set(set)
                .execute($c)
        }
    }};
}
pub(super) use record_use;

#[async_trait]
impl DeviceRepository for DieselEndUserStore {
    async fn register(
        &self,
        device: &Device,
        enrollment: &EnrollmentId,
        at: Timestamp,
        outbox: &[Outbox],
        existing_devices: usize,
    ) -> Result<(), StoreError> {
        let row = DeviceRow::from_device(device);
        let enrollment = enrollment.as_str().to_owned();
        let outbox = outbox.to_vec();
        let expected = i64::try_from(existing_devices).unwrap_or(i64::MAX);
        let written = self
            .db
            .write(move |mut conn| {
                lock_user(conn.reborrow(), &row.user_id)?;
                crate::with_conn!(conn.reborrow(), |c| {
                    // The device's status was judged on this many devices of its user.
                    let existing: i64 = devices::table
                        .filter(devices::user_id.eq(&row.user_id))
                        .count()
                        .get_result(c)?;
                    if existing != expected {
                        return Err(DbError::Rollback(CHANGED));
                    }
                    let moved = diesel::update(
                        enrollments::table
                            .find(&enrollment)
                            .filter(enrollments::status.eq(EnrollmentStatus::PendingOtp.as_str())),
                    )
                    .set((
                        enrollments::status.eq(EnrollmentStatus::PasskeyRegistered.as_str()),
                        enrollments::device_id.eq(Some(&row.id)),
                        enrollments::updated_at.eq(at.as_millis()),
                    ))
                    .execute(c)?;
                    if moved == 0 {
                        return Err(DbError::Rollback(NOT_REGISTRABLE));
                    }
                    let taken = devices::table
                        .filter(devices::credential_id.eq(&row.credential_id))
                        .select(devices::id)
                        .get_result::<String>(c)
                        .optional()?;
                    if taken.is_some() {
                        return Err(DbError::Rollback(DUPLICATE_CREDENTIAL));
                    }
                    diesel::insert_into(devices::table)
                        .values(&row)
                        .execute(c)?;
                    Ok::<_, DbError>(())
                })?;
                write_outbox(conn, &outbox)
            })
            .await;
        match written {
            Ok(()) => Ok(()),
            Err(error) if error.rollback_tag() == Some(CHANGED) => Err(StoreError::Changed),
            Err(error) if error.rollback_tag() == Some(NOT_REGISTRABLE) => {
                Err(StoreError::NotFound)
            }
            Err(error)
                if error.rollback_tag() == Some(DUPLICATE_CREDENTIAL)
                    || error.is_unique_violation() =>
            {
                Err(StoreError::Duplicate)
            }
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn find(&self, id: &DeviceId) -> Result<Option<Device>, StoreError> {
        let row = find_row!(self.db, devices::table, id.as_str().to_owned(), DeviceRow);
        found(row, unavailable, DeviceRow::into_device).await
    }

    async fn of_user(&self, user: &EndUserId) -> Result<Vec<Device>, StoreError> {
        let user = user.as_str().to_owned();
        let rows = load_rows!(
            self.db,
            devices::table
                .filter(devices::user_id.eq(user))
                .order(devices::id.asc())
                .limit(1000),
            DeviceRow
        );
        loaded(rows, unavailable, DeviceRow::into_device).await
    }

    async fn by_credential(&self, credential_id: &str) -> Result<Option<Device>, StoreError> {
        let credential_id = credential_id.to_owned();
        let row = find_where!(
            self.db,
            devices::table.filter(devices::credential_id.eq(credential_id)),
            DeviceRow
        );
        found(row, unavailable, DeviceRow::into_device).await
    }

    async fn record_use(
        &self,
        id: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let recorded = write_with!(self.db, |c| record_use!(c, &id, counter, at))
            .await
            .map_err(unavailable)?;
        Ok(recorded == 1)
    }

    async fn set_status(
        &self,
        id: &DeviceId,
        from: &[DeviceStatus],
        to: DeviceStatus,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let from: Vec<&'static str> = from.iter().map(|s| s.as_str()).collect();
        update_with_effects!(self.db, effects.clone(), |c| {
            let changed = diesel::update(
                devices::table
                    .find(&id)
                    .filter(devices::status.eq_any(&from)),
            )
            .set(devices::status.eq(to.as_str()))
            .execute(c)?;
            if changed == 1 {
                diesel::update(
                    refresh_tokens::table
                        .filter(refresh_tokens::device_id.eq(&id))
                        .filter(refresh_tokens::revoked_at.is_null()),
                )
                .set(refresh_tokens::revoked_at.eq(Some(at.as_millis())))
                .execute(c)?;
            }
            Ok::<_, DbError>(changed)
        })
        .await
        .map_err(unavailable)
    }

    async fn start_recovery(
        &self,
        id: &DeviceId,
        ends_at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let events = Effects::events(outbox.to_vec());
        update_with_effects!(self.db, events, |c| diesel::update(
            devices::table
                .find(&id)
                .filter(devices::status.eq(DeviceStatus::Pending.as_str()))
                .filter(devices::recovery_ends_at.is_null())
        )
        .set(devices::recovery_ends_at.eq(Some(ends_at.as_millis())))
        .execute(c))
        .await
        .map_err(unavailable)
    }

    async fn due_recoveries(&self, now: Timestamp, limit: u32) -> Result<Vec<Device>, StoreError> {
        let rows = load_rows!(
            self.db,
            devices::table
                .filter(devices::status.eq(DeviceStatus::Pending.as_str()))
                .filter(devices::recovery_ends_at.le(now.as_millis()))
                .order(devices::recovery_ends_at)
                .limit(i64::from(limit)),
            DeviceRow
        );
        loaded(rows, unavailable, DeviceRow::into_device).await
    }
}
