use std::sync::Arc;

use idconsent_store_diesel::DieselDeliveryStore;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_webhook::DeliveryStore;

fn store_on(database: TestDatabase) -> (Arc<dyn DeliveryStore>, TestDatabase) {
    (
        Arc::new(DieselDeliveryStore::new(database.db.clone())),
        database,
    )
}

contract_on_both_backends!(
    idconsent_webhook::delivery_store_contract,
    store: (Arc<dyn DeliveryStore>, TestDatabase) = store_on
);
