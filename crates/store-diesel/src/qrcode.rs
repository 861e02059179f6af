//! `QrCodeRepository`: stored QR codes.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::id::{ApplicationId, QrCodeId, TypedId};
use idconsent_kernel::{Environment, ErrorCorrection, QrFormat, QrOptions, Timestamp};
use idconsent_qrcode::{QrCodeRepository, StoreError, StoredQr};

use crate::db::Db;
use crate::error::DbError;
use crate::repo::{duplicate_or, find_row, found, insert_row};
use crate::schema::qr_codes;

#[derive(Debug, Clone)]
pub struct DieselQrCodeStore {
    db: Db,
}

impl DieselQrCodeStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = qr_codes)]
struct QrRow {
    id: String,
    application_id: String,
    environment: String,
    data: String,
    format: String,
    size: i32,
    error_correction: String,
    created_at: i64,
    expires_at: i64,
}

impl QrRow {
    fn from_code(code: &StoredQr) -> Self {
        Self {
            id: code.id.as_str().to_owned(),
            application_id: code.application_id.as_str().to_owned(),
            environment: code.environment.as_str().to_owned(),
            data: code.data.clone(),
            format: code.format.as_str().to_owned(),
            size: i32::try_from(code.options.size).unwrap_or(i32::MAX),
            error_correction: code.options.error_correction.as_str().to_owned(),
            created_at: code.created_at.as_millis(),
            expires_at: code.expires_at.as_millis(),
        }
    }

    fn into_code(self) -> Result<StoredQr, StoreError> {
        let corrupt = |column: &str| {
            StoreError::Unavailable(format!("unreadable qr_codes.{column} of {}", self.id).into())
        };
        Ok(StoredQr {
            environment: Environment::parse(&self.environment)
                .ok_or_else(|| corrupt("environment"))?,
            format: QrFormat::parse(&self.format).ok_or_else(|| corrupt("format"))?,
            options: QrOptions {
                size: u32::try_from(self.size).map_err(|_| corrupt("size"))?,
                error_correction: ErrorCorrection::parse(&self.error_correction)
                    .ok_or_else(|| corrupt("error_correction"))?,
            },
            id: QrCodeId::from_trusted(self.id),
            application_id: ApplicationId::from_trusted(self.application_id),
            data: self.data,
            created_at: Timestamp::from_millis(self.created_at),
            expires_at: Timestamp::from_millis(self.expires_at),
        })
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

#[async_trait]
impl QrCodeRepository for DieselQrCodeStore {
    async fn insert(&self, code: &StoredQr) -> Result<(), StoreError> {
        insert_row!(self.db, qr_codes::table, QrRow::from_code(code))
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn find(&self, id: &QrCodeId) -> Result<Option<StoredQr>, StoreError> {
        let row = find_row!(self.db, qr_codes::table, id.as_str().to_owned(), QrRow);
        found(row, unavailable, QrRow::into_code).await
    }
}
