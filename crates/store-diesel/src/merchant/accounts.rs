//! `MerchantRepository`: merchant accounts, their documents and the approval.

use async_trait::async_trait;
use diesel::dsl::{exists, not};
use diesel::prelude::*;
use idconsent_kernel::id::{ApplicationId, DocumentId, MerchantId, TypedId};
use idconsent_kernel::{
    CalendarDate, EmailAddress, Environment, Page, PageRequest, PhoneNumber, Timestamp,
};
use idconsent_merchant::model::{
    BusinessProfile, Document, DocumentFormat, DocumentStatus, DocumentType, IdentityType,
    Merchant, MerchantStatus, MerchantUser, RegistryStatus,
};
use idconsent_merchant::ports::{MerchantRepository, NewKey, RepositoryError, conflicts};

use super::team::UserRow;
use super::{
    DieselMerchantStore, Lock, NOT_FOUND, corrupt, lock_merchant, page_bounds, repository_error,
};
use crate::error::DbError;
use crate::repo::{
    find_row, found, insert_row, load_rows, loaded, page_of, read_with, update_one, update_one_if,
    write_with,
};
use crate::schema::{api_credentials, applications, merchant_documents, merchant_users, merchants};

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = merchants)]
struct MerchantRow {
    id: String,
    business_name: String,
    contact_name: String,
    entity_type: String,
    industry: String,
    email: String,
    phone: String,
    email_verified_at: Option<i64>,
    phone_verified_at: Option<i64>,
    registered_name: String,
    registration_number: String,
    date_registered: String,
    address: Option<String>,
    usecase: Option<String>,
    description: Option<String>,
    identity_type: Option<String>,
    identity_number: Option<String>,
    registry_status: String,
    registry_checked_at: Option<i64>,
    status: String,
    submitted_at: Option<i64>,
    decided_at: Option<i64>,
    rejection_reason: Option<String>,
    plan: String,
    created_at: i64,
    updated_at: i64,
}

impl MerchantRow {
    fn from_merchant(merchant: &Merchant) -> Self {
        let profile = ProfileChange::from_profile(&merchant.profile, merchant.updated_at);
        Self {
            id: merchant.id.as_str().to_owned(),
            business_name: merchant.business_name.clone(),
            contact_name: merchant.contact_name.clone(),
            entity_type: merchant.entity_type.clone(),
            industry: merchant.industry.clone(),
            email: merchant.email.as_str().to_owned(),
            phone: merchant.phone.as_str().to_owned(),
            email_verified_at: merchant.email_verified_at.map(Timestamp::as_millis),
            phone_verified_at: merchant.phone_verified_at.map(Timestamp::as_millis),
            registered_name: profile.registered_name,
            registration_number: profile.registration_number,
            date_registered: profile.date_registered,
            address: profile.address,
            usecase: profile.usecase,
            description: profile.description,
            identity_type: profile.identity_type,
            identity_number: profile.identity_number,
            registry_status: profile.registry_status,
            registry_checked_at: profile.registry_checked_at,
            status: merchant.status.as_str().to_owned(),
            submitted_at: merchant.submitted_at.map(Timestamp::as_millis),
            decided_at: merchant.decided_at.map(Timestamp::as_millis),
            rejection_reason: merchant.rejection_reason.clone(),
            plan: merchant.plan.clone(),
            created_at: merchant.created_at.as_millis(),
            updated_at: merchant.updated_at.as_millis(),
        }
    }

    fn into_merchant(self) -> Result<Merchant, RepositoryError> {
        let corrupt = |what: &str| corrupt(format!("merchants.{what} of {}", self.id));
        let identity_type = match &self.identity_type {
            Some(text) => Some(IdentityType::parse(text).ok_or_else(|| corrupt("identity_type"))?),
            None => None,
        };
        let profile = BusinessProfile {
            date_registered: CalendarDate::parse(&self.date_registered)
                .map_err(|_| corrupt("date_registered"))?,
            registry_status: RegistryStatus::parse(&self.registry_status)
                .ok_or_else(|| corrupt("registry_status"))?,
            identity_type,
            registered_name: self.registered_name,
            registration_number: self.registration_number,
            address: self.address,
            usecase: self.usecase,
            description: self.description,
            identity_number: self.identity_number,
            registry_checked_at: self.registry_checked_at.map(Timestamp::from_millis),
        };
        Ok(Merchant {
            email: EmailAddress::parse(&self.email).map_err(|_| corrupt("email"))?,
            phone: PhoneNumber::parse(&self.phone).map_err(|_| corrupt("phone"))?,
            status: MerchantStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            id: MerchantId::from_trusted(self.id),
            business_name: self.business_name,
            contact_name: self.contact_name,
            entity_type: self.entity_type,
            industry: self.industry,
            email_verified_at: self.email_verified_at.map(Timestamp::from_millis),
            phone_verified_at: self.phone_verified_at.map(Timestamp::from_millis),
            profile,
            submitted_at: self.submitted_at.map(Timestamp::from_millis),
            decided_at: self.decided_at.map(Timestamp::from_millis),
            rejection_reason: self.rejection_reason,
            plan: self.plan,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

/// The business profile columns (and `updated_at`); `None` clears a column.
#[derive(Debug, AsChangeset)]
#[diesel(table_name = merchants, treat_none_as_null = true)]
struct ProfileChange {
    registered_name: String,
    registration_number: String,
    date_registered: String,
    address: Option<String>,
    usecase: Option<String>,
    description: Option<String>,
    identity_type: Option<String>,
    identity_number: Option<String>,
    registry_status: String,
    registry_checked_at: Option<i64>,
    updated_at: i64,
}

impl ProfileChange {
    fn from_profile(profile: &BusinessProfile, at: Timestamp) -> Self {
        Self {
            registered_name: profile.registered_name.clone(),
            registration_number: profile.registration_number.clone(),
            date_registered: profile.date_registered.to_string(),
            address: profile.address.clone(),
            usecase: profile.usecase.clone(),
            description: profile.description.clone(),
            identity_type: profile.identity_type.map(|t| t.as_str().to_owned()),
            identity_number: profile.identity_number.clone(),
            registry_status: profile.registry_status.as_str().to_owned(),
            registry_checked_at: profile.registry_checked_at.map(Timestamp::as_millis),
            updated_at: at.as_millis(),
        }
    }
}

/// The change that stamps one `*_verified_at` column of a merchant (and `updated_at`) with `at`.
fn verified<C>(
    column: C,
    at: Timestamp,
) -> (
    diesel::dsl::Eq<C, Option<i64>>,
    diesel::dsl::Eq<merchants::updated_at, i64>,
)
where
    C: ExpressionMethods
        + Expression<SqlType = diesel::sql_types::Nullable<diesel::sql_types::BigInt>>,
{
    (
        column.eq(Some(at.as_millis())),
        merchants::updated_at.eq(at.as_millis()),
    )
}

/// A status change; outer `None` leaves a column alone, `Some(None)` clears it.
#[derive(Debug, AsChangeset)]
#[diesel(table_name = merchants)]
struct StatusChange {
    status: String,
    updated_at: i64,
    submitted_at: Option<Option<i64>>,
    decided_at: Option<Option<i64>>,
    rejection_reason: Option<Option<String>>,
}

impl StatusChange {
    fn new(to: MerchantStatus, at: Timestamp, reason: Option<&str>) -> Self {
        let decision = matches!(to, MerchantStatus::Live | MerchantStatus::Rejected);
        Self {
            status: to.as_str().to_owned(),
            updated_at: at.as_millis(),
            submitted_at: (to == MerchantStatus::InReview).then_some(Some(at.as_millis())),
            decided_at: decision.then_some(Some(at.as_millis())),
            rejection_reason: decision.then(|| reason.map(str::to_owned)),
        }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = merchant_documents)]
struct DocumentRow {
    id: String,
    merchant_id: String,
    document_type: String,
    file_name: String,
    format: String,
    size: i64,
    sha256: String,
    blob_key: String,
    status: String,
    uploaded_at: i64,
}

impl DocumentRow {
    fn from_document(document: &Document) -> Self {
        Self {
            id: document.id.as_str().to_owned(),
            merchant_id: document.merchant_id.as_str().to_owned(),
            document_type: document.document_type.as_str().to_owned(),
            file_name: document.file_name.clone(),
            format: document.format.mime_type().to_owned(),
            size: i64::try_from(document.size).unwrap_or(i64::MAX),
            sha256: document.sha256.clone(),
            blob_key: document.blob_key.clone(),
            status: document.status.as_str().to_owned(),
            uploaded_at: document.uploaded_at.as_millis(),
        }
    }

    fn into_document(self) -> Result<Document, RepositoryError> {
        let corrupt = |what: &str| corrupt(format!("merchant_documents.{what} of {}", self.id));
        Ok(Document {
            document_type: DocumentType::parse(&self.document_type)
                .ok_or_else(|| corrupt("document_type"))?,
            format: DocumentFormat::parse_mime(&self.format).ok_or_else(|| corrupt("format"))?,
            size: u64::try_from(self.size).map_err(|_| corrupt("size"))?,
            status: DocumentStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            id: DocumentId::from_trusted(self.id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            file_name: self.file_name,
            sha256: self.sha256,
            blob_key: self.blob_key,
            uploaded_at: Timestamp::from_millis(self.uploaded_at),
        })
    }
}

/// A new API key row (the current one of its environment).
#[derive(Debug, Insertable)]
#[diesel(table_name = api_credentials)]
pub(super) struct NewCredentialRow {
    pub(super) application_id: String,
    pub(super) environment: String,
    pub(super) key_hash: String,
    pub(super) key_sealed: String,
    pub(super) generated_at: i64,
}

impl NewCredentialRow {
    pub(super) fn from_key(application: &str, key: &NewKey) -> Self {
        Self {
            application_id: application.to_owned(),
            environment: key.environment.as_str().to_owned(),
            key_hash: key.hash.clone(),
            key_sealed: key.sealed.as_str().to_owned(),
            generated_at: key.generated_at.as_millis(),
        }
    }
}

#[async_trait]
impl MerchantRepository for DieselMerchantStore {
    async fn create(
        &self,
        merchant: &Merchant,
        owner: &MerchantUser,
    ) -> Result<(), RepositoryError> {
        let merchant = MerchantRow::from_merchant(merchant);
        let owner = UserRow::from_user(owner);
        write_with!(self.db, |c| {
            diesel::insert_into(merchants::table)
                .values(&merchant)
                .execute(c)?;
            diesel::insert_into(merchant_users::table)
                .values(&owner)
                .execute(c)
        })
        .await
        .map_err(repository_error)?;
        Ok(())
    }

    async fn find(&self, id: &MerchantId) -> Result<Option<Merchant>, RepositoryError> {
        let row = find_row!(
            self.db,
            merchants::table,
            id.as_str().to_owned(),
            MerchantRow
        );
        found(row, repository_error, MerchantRow::into_merchant).await
    }

    async fn list(
        &self,
        status: Option<MerchantStatus>,
        page: PageRequest,
    ) -> Result<Page<Merchant>, RepositoryError> {
        let (offset, limit) = page_bounds(page);
        let rows = read_with!(self.db, |c| c.transaction(|c| {
            let mut count = merchants::table.count().into_boxed();
            let mut rows = merchants::table
                .select(MerchantRow::as_select())
                .order((merchants::created_at.desc(), merchants::id.desc()))
                .offset(offset)
                .limit(limit)
                .into_boxed();
            if let Some(status) = status {
                count = count.filter(merchants::status.eq(status.as_str()));
                rows = rows.filter(merchants::status.eq(status.as_str()));
            }
            let count: i64 = count.get_result(c)?;
            Ok::<_, DbError>((rows.load(c)?, count))
        }))
        .await
        .map_err(repository_error)?;
        page_of(rows, page, MerchantRow::into_merchant)
    }

    async fn mark_email_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let change = verified(merchants::email_verified_at, at);
        update_one!(self.db, merchants::table.find(id), change)
            .await
            .map_err(repository_error)
    }

    async fn mark_phone_verified(
        &self,
        id: &MerchantId,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let change = verified(merchants::phone_verified_at, at);
        update_one!(self.db, merchants::table.find(id), change)
            .await
            .map_err(repository_error)
    }

    async fn save_profile(
        &self,
        id: &MerchantId,
        profile: &BusinessProfile,
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let change = ProfileChange::from_profile(profile, at);
        update_one!(self.db, merchants::table.find(id), &change)
            .await
            .map_err(repository_error)
    }

    async fn transition(
        &self,
        id: &MerchantId,
        from: &[MerchantStatus],
        to: MerchantStatus,
        at: Timestamp,
        reason: Option<&str>,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let from: Vec<&'static str> = from.iter().map(|status| status.as_str()).collect();
        let change = StatusChange::new(to, at, reason);
        update_one_if!(
            self.db,
            merchants,
            id,
            merchants::status.eq_any(&from),
            &change,
            conflicts::WRONG_STATUS
        )
        .await
        .map_err(repository_error)
    }

    async fn approve(
        &self,
        id: &MerchantId,
        live_keys: &[(ApplicationId, NewKey)],
        at: Timestamp,
    ) -> Result<(), RepositoryError> {
        let id = id.as_str().to_owned();
        let keys: Vec<NewCredentialRow> = live_keys
            .iter()
            .map(|(application, key)| NewCredentialRow::from_key(application.as_str(), key))
            .collect();
        self.db
            .write(move |mut conn| {
                // Locked first: `ApplicationRepository::create` read-locks the same row, so an
                // application is created either before (and must get a key here) or after (and
                // sees the merchant live).
                let status = lock_merchant(&mut conn, &id, Lock::Update)?
                    .ok_or(DbError::Rollback(NOT_FOUND))?;
                if status != MerchantStatus::InReview.as_str() {
                    return Err(DbError::Rollback(conflicts::WRONG_STATUS));
                }
                approve_locked(conn.reborrow(), &id, &keys, at)
            })
            .await
            .map_err(repository_error)
    }

    async fn add_document(&self, document: &Document) -> Result<(), RepositoryError> {
        let row = DocumentRow::from_document(document);
        insert_row!(self.db, merchant_documents::table, row)
            .await
            .map_err(repository_error)
    }

    async fn list_documents(
        &self,
        merchant: &MerchantId,
    ) -> Result<Vec<Document>, RepositoryError> {
        let merchant = merchant.as_str().to_owned();
        let rows = load_rows!(
            self.db,
            merchant_documents::table
                .filter(merchant_documents::merchant_id.eq(merchant))
                .order((merchant_documents::uploaded_at, merchant_documents::id)),
            DocumentRow
        );
        loaded(rows, repository_error, DocumentRow::into_document).await
    }
}

/// The approval of a merchant whose row is locked and in review: live, documents verified,
/// the given keys current, and no application left without a live key.
fn approve_locked(
    conn: crate::AnyConnection<'_>,
    id: &str,
    keys: &[NewCredentialRow],
    at: Timestamp,
) -> Result<(), DbError> {
    let live = Environment::Live.as_str();
    with_conn!(conn, |c| {
        diesel::update(merchants::table.find(id))
            .set((
                merchants::status.eq(MerchantStatus::Live.as_str()),
                merchants::decided_at.eq(Some(at.as_millis())),
                // A reason from an earlier rejection no longer applies.
                merchants::rejection_reason.eq(None::<String>),
                merchants::updated_at.eq(at.as_millis()),
            ))
            .execute(c)?;
        diesel::update(merchant_documents::table.filter(merchant_documents::merchant_id.eq(id)))
            .set(merchant_documents::status.eq(DocumentStatus::Verified.as_str()))
            .execute(c)?;
        for key in keys {
            let owner = applications::table
                .find(&key.application_id)
                .select(applications::merchant_id)
                .get_result::<String>(c)
                .optional()?;
            if owner.as_deref() != Some(id) {
                // A key for an application this merchant does not have: the caller's list
                // of applications is not the merchant's.
                return Err(DbError::Rollback(conflicts::APPLICATIONS_CHANGED));
            }
            diesel::update(
                api_credentials::table
                    .filter(api_credentials::application_id.eq(&key.application_id))
                    .filter(api_credentials::environment.eq(&key.environment))
                    .filter(api_credentials::revoked_at.is_null()),
            )
            .set(api_credentials::revoked_at.eq(Some(key.generated_at)))
            .execute(c)?;
            diesel::insert_into(api_credentials::table)
                .values(key)
                .execute(c)?;
        }
        let without_live_key: i64 = applications::table
            .filter(applications::merchant_id.eq(id))
            .filter(not(exists(
                api_credentials::table
                    .filter(api_credentials::application_id.eq(applications::id))
                    .filter(api_credentials::environment.eq(live))
                    .filter(api_credentials::revoked_at.is_null()),
            )))
            .count()
            .get_result(c)?;
        if without_live_key > 0 {
            return Err(DbError::Rollback(conflicts::APPLICATIONS_CHANGED));
        }
        Ok(())
    })
}
