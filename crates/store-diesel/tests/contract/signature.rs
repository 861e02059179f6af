use std::sync::Arc;

use idconsent_signature::contract::Stores;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselSignatureStore};

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        requests: Arc::new(DieselSignatureStore::new(database.db.clone())),
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_signature::signature_repository_contract,
    stores: (Stores, TestDatabase) = stores_on
);
