use std::sync::Arc;

use idconsent_enduser::contract::Stores;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselEndUserStore};

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let store = Arc::new(DieselEndUserStore::new(database.db.clone()));
    let stores = Stores {
        enrollments: store.clone(),
        devices: store.clone(),
        challenges: store.clone(),
        refresh_tokens: store,
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_enduser::enduser_store_contract,
    stores: (Stores, TestDatabase) = stores_on
);
