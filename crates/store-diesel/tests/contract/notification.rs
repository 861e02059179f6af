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

contract_on_both_backends!(
    idconsent_notification::message_store_contract,
    store: (Arc<dyn MessageStore>, TestDatabase) = store_on
);
