use std::sync::Arc;

use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselVerificationStore};
use idconsent_verification::contract::Stores;

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        verifications: Arc::new(DieselVerificationStore::new(database.db.clone())),
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_verification::verification_store_contract,
    stores: (Stores, TestDatabase) = stores_on
);
