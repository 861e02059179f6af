use std::sync::Arc;

use idconsent_merchant::contract::MerchantStores;
use idconsent_store_diesel::DieselMerchantStore;
use idconsent_store_diesel::testing::TestDatabase;

fn stores_on(database: TestDatabase) -> (MerchantStores, TestDatabase) {
    let store = Arc::new(DieselMerchantStore::new(database.db.clone()));
    (MerchantStores::from_one(store), database)
}

mod sqlite {
    use super::*;

    async fn stores() -> Option<(MerchantStores, TestDatabase)> {
        Some(stores_on(TestDatabase::sqlite()))
    }

    idconsent_merchant::merchant_store_contract!(stores);
}

mod postgres {
    use super::*;

    async fn stores() -> Option<(MerchantStores, TestDatabase)> {
        TestDatabase::postgres().map(stores_on)
    }

    idconsent_merchant::merchant_store_contract!(stores);
}
