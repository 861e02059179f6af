//! End users, enrollments, devices, FIDO challenges and refresh tokens on diesel. State changes
//! that emit events write their webhook outbox in the same transaction.
//!
//! One [`DieselEndUserStore`] implements every port, a file each: `EnrollmentRepository`
//! (enrollments and the users they create), `DeviceRepository`, `ChallengeRepository` and
//! `RefreshTokenRepository`.

use idconsent_enduser::Audience;
use idconsent_enduser::ports::StoreError;
use idconsent_kernel::Environment;
use idconsent_kernel::id::{ApplicationId, TypedId};

use crate::db::Db;
use crate::error::DbError;
use crate::repo::unreadable;

mod challenges;
mod devices;
mod enrollments;
mod tokens;

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
    StoreError::Unavailable(unreadable(table, column, id))
}

/// The audience columns of enrollments and devices: all set, or all empty.
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
