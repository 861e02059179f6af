use std::sync::Arc;

use idconsent_store_diesel::DieselChipChallengeStore;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_verification::chip::ChipChallengeStore;

fn store_on(database: TestDatabase) -> (Arc<dyn ChipChallengeStore>, TestDatabase) {
    let store: Arc<dyn ChipChallengeStore> =
        Arc::new(DieselChipChallengeStore::new(database.db.clone()));
    (store, database)
}

contract_on_both_backends!(
    idconsent_verification::chip_challenge_store_contract,
    store: (Arc<dyn ChipChallengeStore>, TestDatabase) = store_on
);
