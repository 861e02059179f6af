//! `TeamRepository`: the members of merchants' teams.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::id::{MerchantId, MerchantUserId, TypedId};
use idconsent_kernel::{EmailAddress, Timestamp};
use idconsent_merchant::login::{LoginAdmission, LoginAttempts, LoginPolicy};
use idconsent_merchant::model::{MerchantUser, Role, UserStatus};
use idconsent_merchant::ports::{RepositoryError, TeamRepository, conflicts};

use super::{DieselMerchantStore, NOT_FOUND, corrupt, lock_active_owners, repository_error};
use crate::db::AnyConnection;
use crate::error::DbError;
use crate::repo::{
    find_row, find_where, found, insert_row, load_rows, loaded, update_one, update_one_if,
};
use crate::schema::merchant_users;

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = merchant_users)]
pub(super) struct UserRow {
    id: String,
    merchant_id: String,
    email: String,
    name: String,
    role: String,
    status: String,
    password_hash: Option<String>,
    failed_logins: i32,
    locked_until: Option<i64>,
    created_at: i64,
    updated_at: i64,
}

impl UserRow {
    pub(super) fn from_user(user: &MerchantUser) -> Self {
        Self {
            id: user.id.as_str().to_owned(),
            merchant_id: user.merchant_id.as_str().to_owned(),
            email: user.email.as_str().to_owned(),
            name: user.name.clone(),
            role: user.role.as_str().to_owned(),
            status: user.status.as_str().to_owned(),
            password_hash: user.password_hash.clone(),
            failed_logins: i32::try_from(user.failed_logins).unwrap_or(i32::MAX),
            locked_until: user.locked_until.map(Timestamp::as_millis),
            created_at: user.created_at.as_millis(),
            updated_at: user.updated_at.as_millis(),
        }
    }

    fn into_user(self) -> Result<MerchantUser, RepositoryError> {
        let corrupt = |what: &str| corrupt(format!("merchant_users.{what} of {}", self.id));
        Ok(MerchantUser {
            email: EmailAddress::parse(&self.email).map_err(|_| corrupt("email"))?,
            role: Role::parse(&self.role).ok_or_else(|| corrupt("role"))?,
            status: UserStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            failed_logins: u32::try_from(self.failed_logins)
                .map_err(|_| corrupt("failed_logins"))?,
            id: MerchantUserId::from_trusted(self.id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            name: self.name,
            password_hash: self.password_hash,
            locked_until: self.locked_until.map(Timestamp::from_millis),
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

const REMOVED: &str = "removed";

#[async_trait]
impl TeamRepository for DieselMerchantStore {
    async fn add(&self, user: &MerchantUser) -> Result<(), RepositoryError> {
        insert_row!(self.db, merchant_users::table, UserRow::from_user(user))
            .await
            .map_err(repository_error)
    }

    async fn find(&self, id: &MerchantUserId) -> Result<Option<MerchantUser>, RepositoryError> {
        let row = find_row!(
            self.db,
            merchant_users::table,
            id.as_str().to_owned(),
            UserRow
        );
        found(row, repository_error, UserRow::into_user).await
    }

    async fn find_by_email(
        &self,
        email: &EmailAddress,
    ) -> Result<Option<MerchantUser>, RepositoryError> {
        let email = email.as_str().to_owned();
        let row = find_where!(
            self.db,
            merchant_users::table
                .filter(merchant_users::email.eq(email))
                .filter(merchant_users::status.ne(REMOVED)),
            UserRow
        );
        found(row, repository_error, UserRow::into_user).await
    }

    async fn list(&self, merchant: &MerchantId) -> Result<Vec<MerchantUser>, RepositoryError> {
        let merchant = merchant.as_str().to_owned();
        let rows = load_rows!(
            self.db,
            merchant_users::table
                .filter(merchant_users::merchant_id.eq(merchant))
                .filter(merchant_users::status.ne(REMOVED))
                .order((merchant_users::created_at, merchant_users::id)),
            UserRow
        );
        loaded(rows, repository_error, UserRow::into_user).await
    }

    async fn activate(
        &self,
        id: &MerchantUserId,
        password_hash: &str,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let password_hash = password_hash.to_owned();
        // One conditional statement, so of two racing activations one wins.
        update_one_if!(
            self.db,
            merchant_users,
            id,
            merchant_users::status.eq(UserStatus::Invited.as_str()),
            (
                merchant_users::password_hash.eq(Some(&password_hash)),
                merchant_users::status.eq(UserStatus::Active.as_str()),
                merchant_users::updated_at.eq(at.as_millis()),
            ),
            conflicts::NOT_INVITED
        )
        .await
        .map_err(repository_error)
    }

    async fn remove(
        &self,
        merchant: &MerchantId,
        id: &MerchantUserId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let merchant = merchant.as_str().to_owned();
        let id = id.as_str().to_owned();
        self.db
            .write(move |mut conn| {
                // Locked before counting: of two owners removed at once, the second sees the
                // first one gone.
                let active_owners = lock_active_owners(&mut conn, &merchant)?;
                with_conn!(conn.reborrow(), |c| {
                    let member = merchant_users::table
                        .find(&id)
                        .select((merchant_users::merchant_id, merchant_users::status))
                        .get_result::<(String, String)>(c)
                        .optional()?;
                    let Some((_, status)) = member.filter(|(owner, _)| *owner == merchant) else {
                        return Err(DbError::Rollback(NOT_FOUND));
                    };
                    if status == REMOVED {
                        return Ok(());
                    }
                    let is_active_owner = active_owners.contains(&id);
                    if is_active_owner && active_owners.len() <= 1 {
                        return Err(DbError::Rollback(conflicts::LAST_OWNER));
                    }
                    diesel::update(merchant_users::table.find(&id))
                        .set((
                            merchant_users::status.eq(REMOVED),
                            merchant_users::updated_at.eq(at.as_millis()),
                        ))
                        .execute(c)?;
                    Ok(())
                })
            })
            .await
            .map_err(repository_error)
    }

    async fn take_login_attempt(
        &self,
        id: &MerchantUserId,
        policy: LoginPolicy,
        now: Timestamp,
    ) -> Result<LoginAdmission, RepositoryError> {
        let id = id.as_str().to_owned();
        self.db
            .write(move |mut conn| {
                // The row is locked (PostgreSQL; SQLite has one writer) from the read to the
                // write, so concurrent attempts are judged one after another.
                let query = merchant_users::table
                    .find(&id)
                    .select((merchant_users::failed_logins, merchant_users::locked_until));
                let stored = match &mut conn {
                    AnyConnection::Sqlite(c) => {
                        query.first::<(i32, Option<i64>)>(&mut **c).optional()?
                    }
                    AnyConnection::Postgres(c) => query
                        .for_update()
                        .first::<(i32, Option<i64>)>(&mut **c)
                        .optional()?,
                };
                let (taken, locked_until) = stored.ok_or(DbError::Rollback(NOT_FOUND))?;
                let current = LoginAttempts {
                    taken: u32::try_from(taken).unwrap_or(0),
                    locked_until: locked_until.map(Timestamp::from_millis),
                };
                let admission = policy.judge(current, now);
                if let LoginAdmission::Admitted { state } = admission {
                    let taken = i32::try_from(state.taken).unwrap_or(i32::MAX);
                    let locked_until = state.locked_until.map(Timestamp::as_millis);
                    with_conn!(conn, |c| diesel::update(merchant_users::table.find(&id))
                        .set((
                            merchant_users::failed_logins.eq(taken),
                            merchant_users::locked_until.eq(locked_until),
                        ))
                        .execute(c))?;
                }
                Ok(admission)
            })
            .await
            .map_err(repository_error)
    }

    async fn clear_failed_logins(&self, id: &MerchantUserId) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        update_one!(
            self.db,
            merchant_users::table.find(id),
            (
                merchant_users::failed_logins.eq(0),
                merchant_users::locked_until.eq(None::<i64>),
            )
        )
        .await
        .map_err(repository_error)
    }
}
