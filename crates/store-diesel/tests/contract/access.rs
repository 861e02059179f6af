//! The request gate's stores (replay guard, idempotency keys) on the merchant store.

use std::sync::Arc;

use idconsent_access::contract::AccessStores;
use idconsent_store_diesel::DieselMerchantStore;
use idconsent_store_diesel::testing::TestDatabase;

fn stores_on(database: TestDatabase) -> (AccessStores, TestDatabase) {
    let store = Arc::new(DieselMerchantStore::new(database.db.clone()));
    (AccessStores::from_one(store), database)
}

contract_on_both_backends!(
    idconsent_access::access_store_contract,
    stores: (AccessStores, TestDatabase) = stores_on
);
