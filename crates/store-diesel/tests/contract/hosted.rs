use std::sync::Arc;

use idconsent_hosted::ConfirmationStore;
use idconsent_store_diesel::DieselConfirmationStore;
use idconsent_store_diesel::testing::TestDatabase;

fn store_on(database: TestDatabase) -> (Arc<dyn ConfirmationStore>, TestDatabase) {
    let store: Arc<dyn ConfirmationStore> =
        Arc::new(DieselConfirmationStore::new(database.db.clone()));
    (store, database)
}

contract_on_both_backends!(
    idconsent_hosted::confirmation_store_contract,
    store: (Arc<dyn ConfirmationStore>, TestDatabase) = store_on
);
