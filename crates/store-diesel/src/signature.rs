//! Signature requests on diesel. A transition replaces the row if its version is still the one
//! the service loaded, with the transition's outbox, in one transaction.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_kernel::id::{ApplicationId, SignatureRequestId, TypedId};
use idconsent_kernel::{Environment, Timestamp};
use idconsent_signature::{
    AuditEntry, RequestStatus, SignatureRepository, SignatureRequest, Signer, StoreError,
};
use idconsent_webhook::Effects;
use serde::{Deserialize, Serialize};

use crate::db::Db;
use crate::error::DbError;
use crate::repo::{
    duplicate_or, find_row, found, insert_with_effects, load_rows, loaded, replace_versioned,
    unreadable,
};

pub mod schema {
    diesel::table! {
        signature_requests (id) {
            id -> Text,
            application_id -> Text,
            environment -> Text,
            status -> Text,
            document_sha256 -> Text,
            created_at -> BigInt,
            expires_at -> BigInt,
            completed_at -> Nullable<BigInt>,
            version -> BigInt,
            body -> Text,
        }
    }
}

use schema::signature_requests;

#[derive(Debug, Clone)]
pub struct DieselSignatureStore {
    db: Db,
}

impl DieselSignatureStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = signature_requests)]
struct RequestRow {
    id: String,
    application_id: String,
    environment: String,
    status: String,
    document_sha256: String,
    created_at: i64,
    expires_at: i64,
    completed_at: Option<i64>,
    version: i64,
    body: String,
}

/// The parts of a request kept as JSON in `body`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    document_size: u64,
    document_pages: u32,
    signers: Vec<Signer>,
    callback_url: Option<String>,
    require_biometric: bool,
    audit: Vec<AuditEntry>,
}

impl RequestRow {
    fn from_request(request: &SignatureRequest) -> Result<Self, StoreError> {
        let body = Body {
            document_size: request.document_size,
            document_pages: request.document_pages,
            signers: request.signers.clone(),
            callback_url: request.callback_url.clone(),
            require_biometric: request.require_biometric,
            audit: request.audit.clone(),
        };
        Ok(Self {
            id: request.id.as_str().to_owned(),
            application_id: request.application_id.as_str().to_owned(),
            environment: request.environment.as_str().to_owned(),
            status: request.status.as_str().to_owned(),
            document_sha256: request.document_sha256.clone(),
            created_at: request.created_at.as_millis(),
            expires_at: request.expires_at.as_millis(),
            completed_at: request.completed_at.map(Timestamp::as_millis),
            version: request.version,
            body: serde_json::to_string(&body)
                .map_err(|error| StoreError::Unavailable(Box::new(error)))?,
        })
    }

    fn into_request(self) -> Result<SignatureRequest, StoreError> {
        let corrupt =
            |what: &str| StoreError::Unavailable(unreadable("signature_requests", what, &self.id));
        let body: Body = serde_json::from_str(&self.body).map_err(|_| corrupt("body"))?;
        Ok(SignatureRequest {
            environment: Environment::parse(&self.environment)
                .ok_or_else(|| corrupt("environment"))?,
            status: RequestStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            id: SignatureRequestId::from_trusted(self.id),
            application_id: ApplicationId::from_trusted(self.application_id),
            document_sha256: self.document_sha256,
            document_size: body.document_size,
            document_pages: body.document_pages,
            signers: body.signers,
            callback_url: body.callback_url,
            require_biometric: body.require_biometric,
            created_at: Timestamp::from_millis(self.created_at),
            expires_at: Timestamp::from_millis(self.expires_at),
            completed_at: self.completed_at.map(Timestamp::from_millis),
            audit: body.audit,
            version: self.version,
        })
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

#[async_trait]
impl SignatureRepository for DieselSignatureStore {
    async fn create(
        &self,
        request: &SignatureRequest,
        effects: &Effects,
    ) -> Result<(), StoreError> {
        let row = RequestRow::from_request(request)?;
        insert_with_effects!(self.db, signature_requests::table, row, effects.clone())
            .await
            .map_err(duplicate_or(StoreError::Duplicate, unavailable))
    }

    async fn find(&self, id: &SignatureRequestId) -> Result<Option<SignatureRequest>, StoreError> {
        let key = id.as_str().to_owned();
        let row = find_row!(self.db, signature_requests::table, key, RequestRow);
        found(row, unavailable, RequestRow::into_request).await
    }

    async fn replace(
        &self,
        request: &SignatureRequest,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let row = RequestRow::from_request(request)?;
        replace_versioned!(
            self.db,
            signature_requests::table,
            signature_requests::id,
            signature_requests::version,
            row,
            expected_version,
            effects.clone()
        )
        .await
        .map_err(unavailable)
    }

    async fn due_for_expiry(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<Vec<SignatureRequest>, StoreError> {
        let rows = load_rows!(
            self.db,
            signature_requests::table
                .filter(signature_requests::status.eq(RequestStatus::Pending.as_str()))
                .filter(signature_requests::expires_at.le(now.as_millis()))
                .order((signature_requests::expires_at, signature_requests::id))
                .limit(i64::from(limit)),
            RequestRow
        );
        loaded(rows, unavailable, RequestRow::into_request).await
    }
}
