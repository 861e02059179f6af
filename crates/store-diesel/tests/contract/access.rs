//! The request gate's stores (replay guard, idempotency keys) on the merchant store.

use std::sync::Arc;

use idconsent_access::contract::AccessStores;
use idconsent_store_diesel::DieselMerchantStore;
use idconsent_store_diesel::testing::TestDatabase;

fn stores_on(database: TestDatabase) -> (AccessStores, TestDatabase) {
    let store = Arc::new(DieselMerchantStore::new(database.db.clone()));
    (AccessStores::from_one(store), database)
}

mod sqlite {
    use super::*;

    async fn stores() -> Option<(AccessStores, TestDatabase)> {
        Some(stores_on(TestDatabase::sqlite()))
    }

    idconsent_access::access_store_contract!(stores);
}

mod postgres {
    use super::*;

    async fn stores() -> Option<(AccessStores, TestDatabase)> {
        TestDatabase::postgres().map(stores_on)
    }

    idconsent_access::access_store_contract!(stores);
}
