use std::sync::Arc;

use idconsent_consent::contract::Stores;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselSessionStore};

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        sessions: Arc::new(DieselSessionStore::new(database.db.clone())),
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_consent::session_repository_contract,
    stores: (Stores, TestDatabase) = stores_on
);
