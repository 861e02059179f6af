use std::sync::Arc;

use idconsent_notification::MessageStore;
use idconsent_store_diesel::DieselMessageStore;
use idconsent_store_diesel::testing::TestDatabase;

fn store_on(database: TestDatabase) -> (Arc<dyn MessageStore>, TestDatabase) {
    (
        Arc::new(DieselMessageStore::new(database.db.clone())),
        database,
    )
}

mod sqlite {
    use super::*;

    async fn store() -> Option<(Arc<dyn MessageStore>, TestDatabase)> {
        Some(store_on(TestDatabase::sqlite()))
    }

    idconsent_notification::message_store_contract!(store);
}

mod postgres {
    use super::*;

    async fn store() -> Option<(Arc<dyn MessageStore>, TestDatabase)> {
        TestDatabase::postgres().map(store_on)
    }

    idconsent_notification::message_store_contract!(store);
}
