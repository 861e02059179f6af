use std::sync::Arc;

use idconsent_merchant::contract::MerchantStores;
use idconsent_store_diesel::DieselMerchantStore;
use idconsent_store_diesel::testing::TestDatabase;

fn stores_on(database: TestDatabase) -> (MerchantStores, TestDatabase) {
    let store = Arc::new(DieselMerchantStore::new(database.db.clone()));
    (MerchantStores::from_one(store), database)
}

contract_on_both_backends!(
    idconsent_merchant::merchant_store_contract,
    stores: (MerchantStores, TestDatabase) = stores_on
);
