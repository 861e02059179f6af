use std::sync::Arc;

use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselVerificationStore};
use idconsent_verification::contract::Stores;

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        verifications: Arc::new(DieselVerificationStore::new(database.db.clone())),
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

mod sqlite {
    use super::*;

    async fn stores() -> Option<(Stores, TestDatabase)> {
        Some(stores_on(TestDatabase::sqlite()))
    }

    idconsent_verification::verification_store_contract!(stores);
}

mod postgres {
    use super::*;

    async fn stores() -> Option<(Stores, TestDatabase)> {
        TestDatabase::postgres().map(stores_on)
    }

    idconsent_verification::verification_store_contract!(stores);
}
