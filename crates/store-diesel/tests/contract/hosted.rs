use std::sync::Arc;

use idconsent_hosted::ConfirmationStore;
use idconsent_store_diesel::DieselConfirmationStore;
use idconsent_store_diesel::testing::TestDatabase;

fn store_on(database: TestDatabase) -> (Arc<dyn ConfirmationStore>, TestDatabase) {
    let store: Arc<dyn ConfirmationStore> =
        Arc::new(DieselConfirmationStore::new(database.db.clone()));
    (store, database)
}

mod sqlite {
    use super::*;

    async fn store() -> Option<(Arc<dyn ConfirmationStore>, TestDatabase)> {
        Some(store_on(TestDatabase::sqlite()))
    }

    idconsent_hosted::confirmation_store_contract!(store);
}

mod postgres {
    use super::*;

    async fn store() -> Option<(Arc<dyn ConfirmationStore>, TestDatabase)> {
        TestDatabase::postgres().map(store_on)
    }

    idconsent_hosted::confirmation_store_contract!(store);
}
