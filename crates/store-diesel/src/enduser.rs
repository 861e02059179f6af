//! End users, enrollments, devices, FIDO challenges and refresh tokens on diesel. State changes
//! that emit events write their webhook outbox in the same transaction.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_enduser::ports::{
    Admitted, AssertionInputs, ChallengeRepository, DeviceRepository, EnrollmentRepository,
    NextToken, RefreshTokenRepository, Rotation, Spent, StoreError,
};
use idconsent_enduser::{
    Audience, Challenge, Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus, Purpose,
    PurposeKind, RefreshToken,
};
use idconsent_kernel::id::{
    ApplicationId, ChallengeId, DeviceId, EndUserId, EnrollmentId, RefreshFamilyId, TypedId,
};
use idconsent_kernel::{Environment, PhoneNumber, Timestamp};
use idconsent_webhook::{Effects, Outbox};

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::schema::{devices, end_users, enrollments, fido_challenges, refresh_tokens};
use crate::usage::write_effects;
use crate::webhook::write_outbox;

#[derive(Debug, Clone)]
pub struct DieselEndUserStore {
    db: Db,
}

impl DieselEndUserStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

fn corrupt(table: &str, column: &str, id: &str) -> StoreError {
    StoreError::Unavailable(format!("unreadable stored value: {table}.{column} of {id}").into())
}

fn audience_columns(
    audience: Option<&Audience>,
) -> (Option<String>, Option<String>, Option<String>) {
    match audience {
        Some(a) => (
            Some(a.application_id.as_str().to_owned()),
            Some(a.environment.as_str().to_owned()),
            Some(a.callback_url.clone()),
        ),
        None => (None, None, None),
    }
}

fn audience_from(
    application_id: Option<String>,
    environment: Option<String>,
    callback_url: Option<String>,
) -> Option<Audience> {
    Some(Audience {
        application_id: ApplicationId::from_trusted(application_id?),
        environment: Environment::parse(&environment?)?,
        callback_url: callback_url?,
    })
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = end_users)]
struct UserRow {
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

    fn into_user(self) -> Result<EndUser, StoreError> {
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

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = devices)]
struct DeviceRow {
    id: String,
    user_id: String,
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

    fn into_device(self) -> Result<Device, StoreError> {
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
                kind: PurposeKind::parse(&self.purpose_type).ok_or_else(|| bad("purpose_type"))?,
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

const NOT_REGISTRABLE: &str = "enrollment not pending_otp";
const CHALLENGE_UNUSABLE: &str = "challenge used, expired or unknown";
const DEVICE_REFUSED: &str = "device inactive or counter not advanced";

/// Stores the counter and `last_used_at` of active device `$id` if the counter advances (or
/// stays 0 on both sides): the number of rows changed, 0 or 1.
macro_rules! record_use {
    ($c:expr, $id:expr, $counter:expr, $at:expr) => {{
        let active = devices::table
            .find($id)
            .filter(devices::status.eq(DeviceStatus::Active.as_str()));
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
const DUPLICATE_CREDENTIAL: &str = "credential registered";

#[async_trait]
impl EnrollmentRepository for DieselEndUserStore {
    async fn insert(&self, enrollment: &Enrollment) -> Result<(), StoreError> {
        crate::repo::insert_row!(
            self.db,
            enrollments::table,
            EnrollmentRow::from_enrollment(enrollment)
        )
        .await
        .map_err(unavailable)
    }

    async fn find(&self, id: &EnrollmentId) -> Result<Option<Enrollment>, StoreError> {
        let row = crate::repo::find_row!(
            self.db,
            enrollments::table,
            id.as_str().to_owned(),
            EnrollmentRow
        )
        .await
        .map_err(unavailable)?;
        row.map(EnrollmentRow::into_enrollment).transpose()
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
        let row = self
            .db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| {
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
                })?)
            })
            .await
            .map_err(unavailable)?;
        row.map(EnrollmentRow::into_enrollment).transpose()
    }

    async fn fail(&self, id: &EnrollmentId, at: Timestamp) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        let failed = self
            .db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| diesel::update(
                    enrollments::table
                        .find(&id)
                        .filter(enrollments::status.eq(EnrollmentStatus::PendingOtp.as_str()))
                )
                .set((
                    enrollments::status.eq(EnrollmentStatus::Failed.as_str()),
                    enrollments::updated_at.eq(at.as_millis()),
                ))
                .execute(c))?)
            })
            .await
            .map_err(unavailable)?;
        Ok(failed == 1)
    }

    async fn ensure_user(&self, candidate: &EndUser) -> Result<EndUser, StoreError> {
        let row = UserRow::from_user(candidate);
        let stored = self
            .db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| {
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
                })?)
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
        let row = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| end_users::table
                    .filter(end_users::phone.eq(phone))
                    .select(UserRow::as_select())
                    .get_result(c)
                    .optional())?)
            })
            .await
            .map_err(unavailable)?;
        row.map(UserRow::into_user).transpose()
    }

    async fn user(&self, id: &EndUserId) -> Result<Option<EndUser>, StoreError> {
        let row =
            crate::repo::find_row!(self.db, end_users::table, id.as_str().to_owned(), UserRow)
                .await
                .map_err(unavailable)?;
        row.map(UserRow::into_user).transpose()
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
        let outbox = outbox.to_vec();
        self.db
            .write(move |mut conn| {
                let changed = crate::with_conn!(conn.reborrow(), |c| {
                    let changed = diesel::update(enrollments::table.find(&id).filter(
                        enrollments::status.eq(EnrollmentStatus::PasskeyRegistered.as_str()),
                    ))
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
                    Ok::<_, DbError>(changed == 1)
                })?;
                if changed {
                    write_outbox(conn, &outbox)?;
                }
                Ok(changed)
            })
            .await
            .map_err(unavailable)
    }
}

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
        let row =
            crate::repo::find_row!(self.db, devices::table, id.as_str().to_owned(), DeviceRow)
                .await
                .map_err(unavailable)?;
        row.map(DeviceRow::into_device).transpose()
    }

    async fn of_user(&self, user: &EndUserId) -> Result<Vec<Device>, StoreError> {
        let user = user.as_str().to_owned();
        let rows = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| devices::table
                    .filter(devices::user_id.eq(user))
                    .order(devices::id.asc())
                    .limit(1000)
                    .select(DeviceRow::as_select())
                    .load(c))?)
            })
            .await
            .map_err(unavailable)?;
        rows.into_iter().map(DeviceRow::into_device).collect()
    }

    async fn by_credential(&self, credential_id: &str) -> Result<Option<Device>, StoreError> {
        let credential_id = credential_id.to_owned();
        let row = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| devices::table
                    .filter(devices::credential_id.eq(credential_id))
                    .select(DeviceRow::as_select())
                    .get_result(c)
                    .optional())?)
            })
            .await
            .map_err(unavailable)?;
        row.map(DeviceRow::into_device).transpose()
    }

    async fn record_use(
        &self,
        id: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        self.db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| record_use!(c, &id, counter, at))? == 1)
            })
            .await
            .map_err(unavailable)
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
        let effects = effects.clone();
        self.db
            .write(move |mut conn| {
                let changed = crate::with_conn!(conn.reborrow(), |c| {
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
                    Ok::<_, DbError>(changed == 1)
                })?;
                if changed {
                    write_effects(conn, &effects)?;
                }
                Ok(changed)
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
        let outbox = outbox.to_vec();
        self.db
            .write(move |mut conn| {
                let started = crate::with_conn!(conn.reborrow(), |c| diesel::update(
                    devices::table
                        .find(&id)
                        .filter(devices::status.eq(DeviceStatus::Pending.as_str()))
                        .filter(devices::recovery_ends_at.is_null())
                )
                .set(devices::recovery_ends_at.eq(Some(ends_at.as_millis())))
                .execute(c))?
                    == 1;
                if started {
                    write_outbox(conn, &outbox)?;
                }
                Ok(started)
            })
            .await
            .map_err(unavailable)
    }

    async fn due_recoveries(&self, now: Timestamp, limit: u32) -> Result<Vec<Device>, StoreError> {
        let rows: Vec<DeviceRow> = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| devices::table
                    .filter(devices::status.eq(DeviceStatus::Pending.as_str()))
                    .filter(devices::recovery_ends_at.le(now.as_millis()))
                    .order(devices::recovery_ends_at)
                    .limit(i64::from(limit))
                    .select(DeviceRow::as_select())
                    .load(c))?)
            })
            .await
            .map_err(unavailable)?;
        rows.into_iter().map(DeviceRow::into_device).collect()
    }
}

const CHANGED: &str = "the user's devices changed";

/// On PostgreSQL, serialises the enrollments of one phone, so that their count is a limit;
/// SQLite's single writer already does.
fn lock_phone(conn: AnyConnection<'_>, phone: &str) -> Result<(), DbError> {
    if let AnyConnection::Postgres(c) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtext($1))::text")
            .bind::<diesel::sql_types::Text, _>(format!("enrollments:{phone}"))
            .execute(c)?;
    }
    Ok(())
}

/// On PostgreSQL, serialises the registrations of one user's devices, so that two cannot both
/// be judged on the same devices; SQLite's single writer already does.
fn lock_user(conn: AnyConnection<'_>, user_id: &str) -> Result<(), DbError> {
    if let AnyConnection::Postgres(c) = conn {
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtext($1))::text")
            .bind::<diesel::sql_types::Text, _>(format!("devices:{user_id}"))
            .execute(c)?;
    }
    Ok(())
}

#[async_trait]
impl ChallengeRepository for DieselEndUserStore {
    async fn insert(&self, challenge: &Challenge) -> Result<(), StoreError> {
        crate::repo::insert_row!(
            self.db,
            fido_challenges::table,
            ChallengeRow::from_challenge(challenge)
        )
        .await
        .map_err(unavailable)
    }

    async fn find(&self, id: &ChallengeId) -> Result<Option<Challenge>, StoreError> {
        let row = crate::repo::find_row!(
            self.db,
            fido_challenges::table,
            id.as_str().to_owned(),
            ChallengeRow
        )
        .await
        .map_err(unavailable)?;
        row.map(ChallengeRow::into_challenge).transpose()
    }

    async fn consume(&self, id: &ChallengeId, at: Timestamp) -> Result<bool, StoreError> {
        let id = id.as_str().to_owned();
        self.db
            .write(
                move |conn| Ok(crate::with_conn!(conn, |c| consume_challenge!(c, &id, at))? == 1),
            )
            .await
            .map_err(unavailable)
    }

    async fn read_assertion(
        &self,
        challenge: &ChallengeId,
        credential_id: Option<&str>,
    ) -> Result<AssertionInputs, StoreError> {
        let challenge = challenge.as_str().to_owned();
        let credential_id = credential_id.map(str::to_owned);
        let (challenge, device, user) = self
            .db
            .read(move |conn| {
                Ok(crate::with_conn!(conn, |c| {
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
                })?)
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
        let written = self
            .db
            .write(move |conn| {
                crate::with_conn!(conn, |c| {
                    if consume_challenge!(c, &challenge, at)? != 1 {
                        return Err(DbError::Rollback(CHALLENGE_UNUSABLE));
                    }
                    if record_use!(c, &device, counter, at)? != 1 {
                        return Err(DbError::Rollback(DEVICE_REFUSED));
                    }
                    Ok::<_, DbError>(())
                })
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
        self.db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| diesel::delete(
                    fido_challenges::table
                        .filter(fido_challenges::expires_at.lt(before.as_millis()))
                )
                .execute(c))?)
            })
            .await
            .map_err(unavailable)
    }
}

#[async_trait]
impl RefreshTokenRepository for DieselEndUserStore {
    async fn insert(&self, token: &RefreshToken) -> Result<(), StoreError> {
        crate::repo::insert_row!(
            self.db,
            refresh_tokens::table,
            RefreshRow::from_token(token)
        )
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
        self.db
            .write(move |conn| {
                Ok(crate::with_conn!(conn, |c| {
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
                })?)
            })
            .await
            .map_err(unavailable)
    }

    async fn family_revoked(&self, family: &RefreshFamilyId) -> Result<bool, StoreError> {
        let family = family.as_str().to_owned();
        self.db
            .read(move |conn| {
                let revoked = refresh_tokens::table
                    .filter(refresh_tokens::family.eq(family))
                    .filter(refresh_tokens::revoked_at.is_not_null());
                Ok(crate::with_conn!(conn, |c| diesel::select(
                    diesel::dsl::exists(revoked)
                )
                .get_result::<bool>(c))?)
            })
            .await
            .map_err(unavailable)
    }
}
