//! Fixed-window counters (kernel `Throttle`) on both backends.

use std::sync::Arc;

use idconsent_kernel::Throttle;
use idconsent_store_diesel::DieselThrottle;
use idconsent_store_diesel::testing::TestDatabase;

fn on(database: TestDatabase) -> (Arc<dyn Throttle>, TestDatabase) {
    (Arc::new(DieselThrottle::new(database.db.clone())), database)
}

contract_on_both_backends!(
    idconsent_kernel::throttle_contract,
    throttle: (Arc<dyn Throttle>, TestDatabase) = on
);
