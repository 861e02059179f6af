use std::sync::Arc;

use idconsent_mandate::contract::Stores;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselMandateStore};

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        mandates: Arc::new(DieselMandateStore::new(database.db.clone())),
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_mandate::mandate_repository_contract,
    stores: (Stores, TestDatabase) = stores_on
);
