//! Fixed-window counters (kernel `Throttle`) on both backends.

use std::sync::Arc;

use idconsent_kernel::Throttle;
use idconsent_store_diesel::DieselThrottle;
use idconsent_store_diesel::testing::TestDatabase;

fn on(database: TestDatabase) -> (Arc<dyn Throttle>, TestDatabase) {
    (Arc::new(DieselThrottle::new(database.db.clone())), database)
}

mod sqlite {
    use super::*;

    async fn throttle() -> Option<(Arc<dyn Throttle>, TestDatabase)> {
        Some(on(TestDatabase::sqlite()))
    }

    idconsent_kernel::throttle_contract!(throttle);
}

mod postgres {
    use super::*;

    async fn throttle() -> Option<(Arc<dyn Throttle>, TestDatabase)> {
        TestDatabase::postgres().map(on)
    }

    idconsent_kernel::throttle_contract!(throttle);
}
