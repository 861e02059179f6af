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

mod sqlite {
    use super::*;

    async fn store() -> Option<(Arc<dyn DeliveryStore>, TestDatabase)> {
        Some(store_on(TestDatabase::sqlite()))
    }

    idconsent_webhook::delivery_store_contract!(store);
}

mod postgres {
    use super::*;

    async fn store() -> Option<(Arc<dyn DeliveryStore>, TestDatabase)> {
        TestDatabase::postgres().map(store_on)
    }

    idconsent_webhook::delivery_store_contract!(store);
}
