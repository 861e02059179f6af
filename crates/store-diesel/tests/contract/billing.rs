use std::sync::Arc;

use diesel::RunQueryDsl;
use idconsent_billing::contract::{Seed, Stores};
use idconsent_kernel::id::{ApplicationId, MerchantId};
use idconsent_kernel::{Metric, UsagePeriod};
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{AnyConnection, Db, DieselBillingStore};

/// Rows the merchant and metering stores would have written, as plain SQL.
#[derive(Debug)]
struct SqlSeed(Db);

impl SqlSeed {
    async fn run(&self, sql: String) {
        self.0
            .write(move |conn| {
                match conn {
                    AnyConnection::Sqlite(c) => diesel::sql_query(sql).execute(c)?,
                    AnyConnection::Postgres(c) => diesel::sql_query(sql).execute(c)?,
                };
                Ok(())
            })
            .await
            .unwrap();
    }
}

#[async_trait::async_trait]
impl Seed for SqlSeed {
    async fn merchant(&self, merchant: &MerchantId, application: &ApplicationId) {
        let (merchant, application) = (merchant.as_str(), application.as_str());
        self.run(format!(
            "INSERT INTO merchants (id, business_name, contact_name, entity_type, industry, email, \
             phone, registered_name, registration_number, date_registered, registry_status, \
             status, plan, created_at, updated_at) VALUES ('{merchant}', 'Shop', 'Ann', \
             'company', 'retail', '{merchant}@shop.example', '+447700900000', 'Shop Ltd', '1', \
             '2020-01-01', 'verified', 'live', 'free', 0, 0)"
        ))
        .await;
        self.run(format!(
            "INSERT INTO applications (id, merchant_id, client_id, name, callback_url, \
             redirect_uris, request_types, secret, webhook_secret, created_at, updated_at) \
             VALUES ('{application}', '{merchant}', 'cli_{application}', 'App', \
             'https://shop.example/hooks', '[]', '[]', 's', 'w', 0, 0)"
        ))
        .await;
    }

    async fn metered(&self, merchant: &MerchantId, metric: Metric, period: UsagePeriod, used: u64) {
        self.run(format!(
            "INSERT INTO usage_counters (merchant_id, metric, period, used) VALUES ('{}', '{}', \
             '{period}', {used})",
            merchant.as_str(),
            metric.as_str()
        ))
        .await;
    }
}

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        billing: Arc::new(DieselBillingStore::new(database.db.clone())),
        seed: Arc::new(SqlSeed(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_billing::billing_store_contract,
    stores: (Stores, TestDatabase) = stores_on
);
