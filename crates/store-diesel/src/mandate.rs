//! `MandateRepository` on diesel. A change replaces the row if its version is still the one the
//! service loaded, with the change's effects (outbox, usage charges), in one transaction.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_approval::Recipient;
use idconsent_kernel::id::{ApplicationId, MandateId, TypedId};
use idconsent_kernel::{
    Currency, EmailAddress, Environment, Money, Page, PageRequest, PhoneNumber, Timestamp,
};
use idconsent_mandate::{
    Frequency, Mandate, MandateQuery, MandateRepository, MandateStatus, MandateType, StoreError,
    Terms,
};
use idconsent_webhook::Effects;

use crate::db::Db;
use crate::error::DbError;
use crate::repo::{
    duplicate_or, find_row, found, insert_with_effects, load_rows, loaded, page_of, read_page,
    replace_versioned,
};
use crate::usage::quota_exceeded;

pub mod schema {
    diesel::table! {
        mandates (id) {
            id -> Text,
            application_id -> Text,
            environment -> Text,
            status -> Text,
            kind -> Text,
            recipient -> Text,
            amount_minor -> Nullable<BigInt>,
            currency -> Text,
            frequency -> Nullable<Text>,
            description -> Text,
            callback_url -> Nullable<Text>,
            authorized_amount_minor -> Nullable<BigInt>,
            authorized_currency -> Nullable<Text>,
            authorized_frequency -> Nullable<Text>,
            created_at -> BigInt,
            updated_at -> BigInt,
            authorization_deadline -> Nullable<BigInt>,
            authorized_at -> Nullable<BigInt>,
            cancelled_at -> Nullable<BigInt>,
            version -> BigInt,
        }
    }
}

use schema::mandates;

#[derive(Debug, Clone)]
pub struct DieselMandateStore {
    db: Db,
}

impl DieselMandateStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = mandates, treat_none_as_null = true)]
struct MandateRow {
    id: String,
    application_id: String,
    environment: String,
    status: String,
    kind: String,
    recipient: String,
    amount_minor: Option<i64>,
    currency: String,
    frequency: Option<String>,
    description: String,
    callback_url: Option<String>,
    authorized_amount_minor: Option<i64>,
    authorized_currency: Option<String>,
    authorized_frequency: Option<String>,
    created_at: i64,
    updated_at: i64,
    authorization_deadline: Option<i64>,
    authorized_at: Option<i64>,
    cancelled_at: Option<i64>,
    version: i64,
}

impl MandateRow {
    fn from_mandate(mandate: &Mandate) -> Self {
        let authorized = mandate.authorized_terms.as_ref();
        Self {
            id: mandate.id.as_str().to_owned(),
            application_id: mandate.application_id.as_str().to_owned(),
            environment: mandate.environment.as_str().to_owned(),
            status: mandate.status.as_str().to_owned(),
            kind: mandate.kind.as_str().to_owned(),
            recipient: match &mandate.recipient {
                Recipient::Phone(phone) => phone.as_str().to_owned(),
                Recipient::Email(email) => email.as_str().to_owned(),
            },
            amount_minor: mandate.terms.amount.map(|amount| amount.minor()),
            currency: mandate.terms.currency.code().to_owned(),
            frequency: mandate.terms.frequency.map(|f| f.as_str().to_owned()),
            description: mandate.description.clone(),
            callback_url: mandate.callback_url.clone(),
            authorized_amount_minor: authorized
                .and_then(|terms| terms.amount)
                .map(|amount| amount.minor()),
            authorized_currency: authorized.map(|terms| terms.currency.code().to_owned()),
            authorized_frequency: authorized
                .and_then(|terms| terms.frequency)
                .map(|f| f.as_str().to_owned()),
            created_at: mandate.created_at.as_millis(),
            updated_at: mandate.updated_at.as_millis(),
            authorization_deadline: mandate.authorization_deadline.map(Timestamp::as_millis),
            authorized_at: mandate.authorized_at.map(Timestamp::as_millis),
            cancelled_at: mandate.cancelled_at.map(Timestamp::as_millis),
            version: mandate.version,
        }
    }

    fn into_mandate(self) -> Result<Mandate, StoreError> {
        let id = self.id.clone();
        let corrupt = |column: &str| {
            StoreError::Unavailable(format!("unreadable mandates.{column} of {id}").into())
        };
        let terms = |amount: Option<i64>, currency: &str, frequency: Option<&str>, prefix: &str| {
            let currency = Currency::parse(currency).map_err(|_| corrupt(prefix))?;
            Ok::<_, StoreError>(Terms {
                amount: amount
                    .map(|minor| Money::from_minor(minor, currency))
                    .transpose()
                    .map_err(|_| corrupt(prefix))?,
                currency,
                frequency: frequency
                    .map(|text| Frequency::parse(text).ok_or_else(|| corrupt(prefix)))
                    .transpose()?,
            })
        };
        let recipient = if self.recipient.contains('@') {
            EmailAddress::parse(&self.recipient)
                .map(Recipient::Email)
                .map_err(|_| corrupt("recipient"))?
        } else {
            PhoneNumber::parse(&self.recipient)
                .map(Recipient::Phone)
                .map_err(|_| corrupt("recipient"))?
        };
        Ok(Mandate {
            environment: Environment::parse(&self.environment)
                .ok_or_else(|| corrupt("environment"))?,
            status: MandateStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            kind: MandateType::parse(&self.kind).ok_or_else(|| corrupt("kind"))?,
            recipient,
            terms: terms(
                self.amount_minor,
                &self.currency,
                self.frequency.as_deref(),
                "terms",
            )?,
            authorized_terms: self
                .authorized_currency
                .as_deref()
                .map(|currency| {
                    terms(
                        self.authorized_amount_minor,
                        currency,
                        self.authorized_frequency.as_deref(),
                        "authorized terms",
                    )
                })
                .transpose()?,
            id: MandateId::from_trusted(self.id),
            application_id: ApplicationId::from_trusted(self.application_id),
            description: self.description,
            callback_url: self.callback_url,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            authorization_deadline: self.authorization_deadline.map(Timestamp::from_millis),
            authorized_at: self.authorized_at.map(Timestamp::from_millis),
            cancelled_at: self.cancelled_at.map(Timestamp::from_millis),
            version: self.version,
        })
    }
}

fn unavailable(error: DbError) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

/// A failed write's error: the quota a charge ran into, else the database's.
fn write_error(error: DbError, effects: &Effects) -> StoreError {
    match quota_exceeded(&error, &effects.charges) {
        Some(quota) => StoreError::Quota(quota),
        None => unavailable(error),
    }
}

const PENDING: &str = "pending_authorization";

#[async_trait]
impl MandateRepository for DieselMandateStore {
    async fn create(&self, mandate: &Mandate, effects: &Effects) -> Result<(), StoreError> {
        let row = MandateRow::from_mandate(mandate);
        insert_with_effects!(self.db, mandates::table, row, effects.clone())
            .await
            .map_err(duplicate_or(StoreError::Duplicate, |error| {
                write_error(error, effects)
            }))
    }

    async fn find(&self, id: &MandateId) -> Result<Option<Mandate>, StoreError> {
        let row = find_row!(self.db, mandates::table, id.as_str().to_owned(), MandateRow);
        found(row, unavailable, MandateRow::into_mandate).await
    }

    async fn replace(
        &self,
        mandate: &Mandate,
        expected_version: i64,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let row = MandateRow::from_mandate(mandate);
        replace_versioned!(
            self.db,
            mandates::table,
            mandates::id,
            mandates::version,
            row,
            expected_version,
            effects.clone()
        )
        .await
        .map_err(|error| write_error(error, effects))
    }

    async fn list(
        &self,
        query: &MandateQuery,
        page: PageRequest,
    ) -> Result<Page<Mandate>, StoreError> {
        let query = query.clone();
        let now = query.now.as_millis();
        let order = (mandates::created_at.desc(), mandates::id.desc());
        let rows = read_page!(
            self.db,
            || {
                let mut scoped = mandates::table
                    .filter(mandates::application_id.eq(query.application_id.as_str()))
                    .filter(mandates::environment.eq(query.environment.as_str()))
                    .into_boxed();
                if let Some(kind) = query.kind {
                    scoped = scoped.filter(mandates::kind.eq(kind.as_str()));
                }
                // The status as of `now`: a pending mandate past its deadline is listed as
                // expired before the sweeper has written it.
                let lapsed = mandates::status
                    .eq(PENDING)
                    .and(mandates::authorization_deadline.le(now));
                match query.status {
                    None => scoped,
                    Some(MandateStatus::PendingAuthorization) => scoped
                        .filter(mandates::status.eq(PENDING))
                        .filter(mandates::authorization_deadline.gt(now)),
                    Some(MandateStatus::Expired) => scoped.filter(
                        mandates::status
                            .eq(MandateStatus::Expired.as_str())
                            .nullable()
                            .or(lapsed),
                    ),
                    Some(status) => scoped.filter(mandates::status.eq(status.as_str())),
                }
            },
            order,
            MandateRow,
            page
        )
        .await
        .map_err(unavailable)?;
        page_of(rows, page, MandateRow::into_mandate)
    }

    async fn due_for_expiry(&self, now: Timestamp, limit: u32) -> Result<Vec<Mandate>, StoreError> {
        let rows = load_rows!(
            self.db,
            mandates::table
                .filter(mandates::status.eq(PENDING))
                .filter(mandates::authorization_deadline.le(now.as_millis()))
                .order((mandates::authorization_deadline, mandates::id))
                .limit(i64::from(limit)),
            MandateRow
        );
        loaded(rows, unavailable, MandateRow::into_mandate).await
    }
}
