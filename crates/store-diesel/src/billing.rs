//! `BillingStore` on diesel: plans beside `merchants.plan`, the shared request budget leased
//! under a row lock (read → `budget::decide` → write, ADR 0029), reported API calls, invoices
//! unique per merchant and month.

use async_trait::async_trait;
use diesel::prelude::*;
use idconsent_billing::budget::{self, BudgetState, LeaseDecision, LeaseRequest};
use idconsent_billing::{
    BillingStore, CallReport, Invoice, InvoiceItem, InvoiceQuery, InvoiceStatus, Plan, PlanTerms,
    RateLimits, StoreError, Usage,
};
use idconsent_kernel::id::{ApplicationId, InvoiceId, MerchantId, TypedId};
use idconsent_kernel::{Metric, Page, PageRequest, Timestamp, UsagePeriod};

use crate::db::{AnyConnection, Db};
use crate::error::DbError;
use crate::repo::{
    counted, find_row, found, insert_absent, page_of, read_page, read_with, update_rows, write_with,
};
use crate::schema::{applications, merchants};
use crate::usage::schema::usage_counters;

pub mod schema {
    diesel::table! {
        billing_plans (merchant_id) {
            merchant_id -> Text,
            plan -> Text,
            per_minute -> BigInt,
            per_day -> Nullable<BigInt>,
            concurrent -> BigInt,
        }
    }

    diesel::table! {
        rate_budgets (merchant_id) {
            merchant_id -> Text,
            tat_micros -> BigInt,
            day -> BigInt,
            day_used -> BigInt,
        }
    }

    diesel::table! {
        api_calls (merchant_id, period, day) {
            merchant_id -> Text,
            period -> Text,
            day -> BigInt,
            calls -> BigInt,
        }
    }

    diesel::table! {
        invoices (id) {
            id -> Text,
            merchant_id -> Text,
            period -> Text,
            plan -> Text,
            currency -> Text,
            amount_cents -> BigInt,
            items -> Text,
            status -> Text,
            issued_at -> BigInt,
            due_at -> BigInt,
            paid_at -> Nullable<BigInt>,
        }
    }
}

use schema::{api_calls, billing_plans, invoices, rate_budgets};

const NO_MERCHANT: &str = "billing: no such merchant";

#[derive(Debug, Clone)]
pub struct DieselBillingStore {
    db: Db,
}

impl DieselBillingStore {
    pub fn new(db: Db) -> Self {
        Self { db }
    }
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn store_error(error: DbError) -> StoreError {
    match error {
        DbError::Rollback(NO_MERCHANT) => StoreError::NotFound,
        other => StoreError::Unavailable(Box::new(other)),
    }
}

fn corrupt(what: String) -> StoreError {
    StoreError::Unavailable(what.into())
}

#[derive(Debug, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = billing_plans, treat_none_as_null = true)]
struct PlanRow {
    merchant_id: String,
    plan: String,
    per_minute: i64,
    per_day: Option<i64>,
    concurrent: i64,
}

/// The terms of a merchant whose `merchants.plan` is `plan`: an enterprise plan's limits are
/// the stored ones; the other plans' are always the current standard ones.
fn terms_of(plan: &str, row: Option<PlanRow>) -> Result<PlanTerms, StoreError> {
    let plan = Plan::parse(plan).ok_or_else(|| corrupt(format!("unknown plan {plan}")))?;
    Ok(match row {
        Some(row) if plan == Plan::Enterprise && row.plan == plan.as_str() => PlanTerms {
            plan,
            limits: RateLimits {
                per_minute: to_u64(row.per_minute),
                per_day: row.per_day.map(to_u64),
                concurrent: to_u64(row.concurrent),
            },
        },
        _ => PlanTerms::standard(plan),
    })
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = rate_budgets)]
struct BudgetRow {
    merchant_id: String,
    tat_micros: i64,
    day: i64,
    day_used: i64,
}

#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = invoices)]
struct InvoiceRow {
    id: String,
    merchant_id: String,
    period: String,
    plan: String,
    currency: String,
    amount_cents: i64,
    items: String,
    status: String,
    issued_at: i64,
    due_at: i64,
    paid_at: Option<i64>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct StoredItem {
    description: String,
    amount_cents: i64,
}

impl InvoiceRow {
    fn from_invoice(invoice: &Invoice) -> Self {
        let items: Vec<StoredItem> = invoice
            .items
            .iter()
            .map(|item| StoredItem {
                description: item.description.clone(),
                amount_cents: item.amount_cents,
            })
            .collect();
        Self {
            id: invoice.id.as_str().to_owned(),
            merchant_id: invoice.merchant_id.as_str().to_owned(),
            period: invoice.period.to_string(),
            plan: invoice.plan.as_str().to_owned(),
            currency: idconsent_billing::invoice::CURRENCY.to_owned(),
            amount_cents: invoice.amount_cents,
            items: serde_json::to_string(&items).unwrap_or_else(|_| "[]".into()),
            status: invoice.status.as_str().to_owned(),
            issued_at: invoice.issued_at.as_millis(),
            due_at: invoice.due_at.as_millis(),
            paid_at: invoice.paid_at.map(Timestamp::as_millis),
        }
    }

    fn into_invoice(self) -> Result<Invoice, StoreError> {
        let id = self.id.clone();
        let bad = |column: &str| corrupt(format!("unreadable invoices.{column} of {id}"));
        let items: Vec<StoredItem> = serde_json::from_str(&self.items).map_err(|_| bad("items"))?;
        Ok(Invoice {
            period: UsagePeriod::parse(&self.period).ok_or_else(|| bad("period"))?,
            plan: Plan::parse(&self.plan).ok_or_else(|| bad("plan"))?,
            status: InvoiceStatus::parse(&self.status).ok_or_else(|| bad("status"))?,
            items: items
                .into_iter()
                .map(|item| InvoiceItem {
                    description: item.description,
                    amount_cents: item.amount_cents,
                })
                .collect(),
            id: InvoiceId::from_trusted(self.id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            amount_cents: self.amount_cents,
            issued_at: Timestamp::from_millis(self.issued_at),
            due_at: Timestamp::from_millis(self.due_at),
            paid_at: self.paid_at.map(Timestamp::from_millis),
        })
    }
}

/// The budget row of `merchant`, locked until the transaction ends on PostgreSQL (SQLite has
/// a single writer, whose transaction is the lock).
fn locked_budget(conn: AnyConnection<'_>, merchant: &str) -> Result<Option<BudgetRow>, DbError> {
    let query = || rate_budgets::table.find(merchant.to_owned());
    Ok(match conn {
        AnyConnection::Postgres(c) => query()
            .select(BudgetRow::as_select())
            .for_update()
            .get_result(c)
            .optional()?,
        AnyConnection::Sqlite(c) => query()
            .select(BudgetRow::as_select())
            .get_result(c)
            .optional()?,
    })
}

/// Adds `calls` to the merchant's day, inside the caller's transaction.
fn add_calls(conn: AnyConnection<'_>, merchant: &str, calls: CallReport) -> Result<(), DbError> {
    if calls.calls == 0 {
        return Ok(());
    }
    let period = UsagePeriod::of(Timestamp::from_millis(calls.day.saturating_mul(86_400_000)));
    let row = (
        api_calls::merchant_id.eq(merchant),
        api_calls::period.eq(period.to_string()),
        api_calls::day.eq(calls.day),
        api_calls::calls.eq(to_i64(calls.calls)),
    );
    crate::with_conn!(conn, |c| diesel::insert_into(api_calls::table)
        .values(row)
        .on_conflict((api_calls::merchant_id, api_calls::period, api_calls::day))
        .do_update()
        .set(api_calls::calls.eq(api_calls::calls + to_i64(calls.calls)))
        .execute(c))?;
    Ok(())
}

#[async_trait]
impl BillingStore for DieselBillingStore {
    async fn plan(&self, merchant: &MerchantId) -> Result<PlanTerms, StoreError> {
        let id = merchant.as_str().to_owned();
        let (plan, row) = read_with!(self.db, |c| {
            let plan: Option<String> = merchants::table
                .find(&id)
                .select(merchants::plan)
                .get_result(c)
                .optional()?;
            let Some(plan) = plan else {
                return Err(DbError::Rollback(NO_MERCHANT));
            };
            let row = billing_plans::table
                .find(&id)
                .select(PlanRow::as_select())
                .get_result(c)
                .optional()?;
            Ok::<_, DbError>((plan, row))
        })
        .await
        .map_err(store_error)?;
        terms_of(&plan, row)
    }

    async fn set_plan(&self, merchant: &MerchantId, terms: &PlanTerms) -> Result<(), StoreError> {
        let id = merchant.as_str().to_owned();
        let terms = *terms;
        let row = PlanRow {
            merchant_id: id,
            plan: terms.plan.as_str().to_owned(),
            per_minute: to_i64(terms.limits.per_minute),
            per_day: terms.limits.per_day.map(to_i64),
            concurrent: to_i64(terms.limits.concurrent),
        };
        write_with!(self.db, |c| {
            let changed = diesel::update(merchants::table.find(&row.merchant_id))
                .set(merchants::plan.eq(terms.plan.as_str()))
                .execute(c)?;
            if changed == 0 {
                return Err(DbError::Rollback(NO_MERCHANT));
            }
            diesel::insert_into(billing_plans::table)
                .values(&row)
                .on_conflict(billing_plans::merchant_id)
                .do_update()
                .set(&row)
                .execute(c)?;
            Ok::<_, DbError>(())
        })
        .await
        .map_err(store_error)
    }

    async fn merchant_of(&self, application: &ApplicationId) -> Result<MerchantId, StoreError> {
        let id = application.as_str().to_owned();
        let merchant: Option<String> = read_with!(self.db, |c| applications::table
            .find(&id)
            .select(applications::merchant_id)
            .get_result(c)
            .optional())
        .await
        .map_err(store_error)?;
        merchant
            .map(MerchantId::from_trusted)
            .ok_or(StoreError::NotFound)
    }

    async fn lease(
        &self,
        merchant: &MerchantId,
        request: &LeaseRequest,
        calls: CallReport,
    ) -> Result<LeaseDecision, StoreError> {
        let id = merchant.as_str().to_owned();
        let request = *request;
        self.db
            .write(move |mut conn| {
                let current = match locked_budget(conn.reborrow(), &id)? {
                    Some(row) => row,
                    None => {
                        // First lease of this merchant: create the row (a racing first lease
                        // creates it too; ours then does nothing) and lock it.
                        let fresh = BudgetRow {
                            merchant_id: id.clone(),
                            tat_micros: 0,
                            day: 0,
                            day_used: 0,
                        };
                        crate::with_conn!(conn.reborrow(), |c| diesel::insert_into(
                            rate_budgets::table
                        )
                        .values(&fresh)
                        .on_conflict_do_nothing()
                        .execute(c))?;
                        locked_budget(conn.reborrow(), &id)?.unwrap_or(fresh)
                    }
                };
                let state = BudgetState {
                    tat_micros: current.tat_micros,
                    day: current.day,
                    day_used: to_u64(current.day_used),
                };
                let decision = budget::decide(state, &request);
                if decision.state != state {
                    crate::with_conn!(conn.reborrow(), |c| diesel::update(
                        rate_budgets::table.find(&id)
                    )
                    .set((
                        rate_budgets::tat_micros.eq(decision.state.tat_micros),
                        rate_budgets::day.eq(decision.state.day),
                        rate_budgets::day_used.eq(to_i64(decision.state.day_used)),
                    ))
                    .execute(c))?;
                }
                add_calls(conn, &id, calls)?;
                Ok(decision)
            })
            .await
            .map_err(store_error)
    }

    async fn record_calls(
        &self,
        merchant: &MerchantId,
        calls: CallReport,
    ) -> Result<(), StoreError> {
        if calls.calls == 0 {
            return Ok(());
        }
        let id = merchant.as_str().to_owned();
        self.db
            .write(move |conn| add_calls(conn, &id, calls))
            .await
            .map_err(store_error)
    }

    async fn usage(&self, merchant: &MerchantId, period: UsagePeriod) -> Result<Usage, StoreError> {
        let id = merchant.as_str().to_owned();
        let period = period.to_string();
        let (counters, calls) = read_with!(self.db, |c| {
            let counters: Vec<(String, i64)> = usage_counters::table
                .filter(usage_counters::merchant_id.eq(&id))
                .filter(usage_counters::period.eq(&period))
                .select((usage_counters::metric, usage_counters::used))
                .load(c)?;
            let calls: Vec<i64> = api_calls::table
                .filter(api_calls::merchant_id.eq(&id))
                .filter(api_calls::period.eq(&period))
                .select(api_calls::calls)
                .load(c)?;
            Ok::<_, DbError>((counters, calls))
        })
        .await
        .map_err(store_error)?;
        Ok(Usage {
            metered: counters
                .into_iter()
                .filter(|(_, used)| *used > 0)
                .filter_map(|(metric, used)| Some((Metric::parse(&metric)?, to_u64(used))))
                .collect(),
            api_calls: calls.into_iter().map(to_u64).sum(),
        })
    }

    async fn merchants_after(
        &self,
        after: Option<&MerchantId>,
        created_before: Timestamp,
        limit: u32,
    ) -> Result<Vec<(MerchantId, PlanTerms)>, StoreError> {
        let after = after.map(|id| id.as_str().to_owned()).unwrap_or_default();
        let (merchants, plans) = read_with!(self.db, |c| {
            let merchants: Vec<(String, String)> = merchants::table
                .filter(merchants::id.gt(&after))
                .filter(merchants::created_at.lt(created_before.as_millis()))
                .order(merchants::id)
                .limit(i64::from(limit))
                .select((merchants::id, merchants::plan))
                .load(c)?;
            let ids: Vec<&String> = merchants.iter().map(|(id, _)| id).collect();
            let plans: Vec<PlanRow> = billing_plans::table
                .filter(billing_plans::merchant_id.eq_any(&ids))
                .select(PlanRow::as_select())
                .load(c)?;
            Ok::<_, DbError>((merchants, plans))
        })
        .await
        .map_err(store_error)?;
        let mut plans: std::collections::HashMap<String, PlanRow> = plans
            .into_iter()
            .map(|row| (row.merchant_id.clone(), row))
            .collect();
        merchants
            .into_iter()
            .map(|(id, plan)| {
                let terms = terms_of(&plan, plans.remove(&id))?;
                Ok((MerchantId::from_trusted(id), terms))
            })
            .collect()
    }

    async fn insert_invoice(&self, invoice: &Invoice) -> Result<bool, StoreError> {
        let row = InvoiceRow::from_invoice(invoice);
        // The unique (merchant_id, period) makes a second invoice for the month a no-op, also
        // for a racing process.
        insert_absent!(self.db, invoices::table, row)
            .await
            .map_err(store_error)
    }

    async fn invoice(&self, id: &InvoiceId) -> Result<Option<Invoice>, StoreError> {
        let row = find_row!(self.db, invoices::table, id.as_str().to_owned(), InvoiceRow);
        found(row, store_error, InvoiceRow::into_invoice).await
    }

    async fn invoices(
        &self,
        query: &InvoiceQuery,
        page: PageRequest,
    ) -> Result<Page<Invoice>, StoreError> {
        let query = query.clone();
        let now = query.now.as_millis();
        let order = (invoices::period.desc(), invoices::id.desc());
        let rows = read_page!(
            self.db,
            || {
                let mut scoped = invoices::table
                    .filter(invoices::merchant_id.eq(query.merchant_id.as_str()))
                    .into_boxed();
                if let Some(period) = query.period {
                    scoped = scoped.filter(invoices::period.eq(period.to_string()));
                }
                // The status as of `now`: pending past its due date is overdue.
                let pending = InvoiceStatus::Pending.as_str();
                let overdue = InvoiceStatus::Overdue.as_str();
                match query.status {
                    None => scoped,
                    Some(InvoiceStatus::Pending) => scoped
                        .filter(invoices::status.eq(pending))
                        .filter(invoices::due_at.gt(now)),
                    Some(InvoiceStatus::Overdue) => scoped.filter(
                        invoices::status
                            .eq(overdue)
                            .or(invoices::status.eq(pending).and(invoices::due_at.le(now))),
                    ),
                    Some(status) => scoped.filter(invoices::status.eq(status.as_str())),
                }
            },
            order,
            InvoiceRow,
            page
        )
        .await
        .map_err(store_error)?;
        page_of(rows, page, InvoiceRow::into_invoice)
    }

    async fn mark_paid(&self, id: &InvoiceId, at: Timestamp) -> Result<Invoice, StoreError> {
        let key = id.as_str().to_owned();
        let row = write_with!(self.db, |c| {
            // Paid once: a second call finds it paid and changes nothing.
            diesel::update(
                invoices::table
                    .find(&key)
                    .filter(invoices::status.ne(InvoiceStatus::Paid.as_str())),
            )
            .set((
                invoices::status.eq(InvoiceStatus::Paid.as_str()),
                invoices::paid_at.eq(at.as_millis()),
            ))
            .execute(c)?;
            invoices::table
                .find(&key)
                .select(InvoiceRow::as_select())
                .get_result(c)
                .optional()
        })
        .await
        .map_err(store_error)?;
        row.ok_or(StoreError::NotFound)?.into_invoice()
    }

    async fn mark_overdue(&self, now: Timestamp) -> Result<u64, StoreError> {
        let overdue = update_rows!(
            self.db,
            invoices::table
                .filter(invoices::status.eq(InvoiceStatus::Pending.as_str()))
                .filter(invoices::due_at.le(now.as_millis())),
            invoices::status.eq(InvoiceStatus::Overdue.as_str())
        );
        counted(overdue, store_error).await
    }
}
