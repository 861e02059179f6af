use std::sync::Arc;

use idconsent_kernel::{BlobStore, SystemClock};
use idconsent_store_diesel::DieselBlobStore;
use idconsent_store_diesel::testing::TestDatabase;

fn blobs_on(database: TestDatabase) -> (Arc<dyn BlobStore>, TestDatabase) {
    let store = DieselBlobStore::new(database.db.clone(), Arc::new(SystemClock));
    (Arc::new(store), database)
}

contract_on_both_backends!(
    idconsent_kernel::blob_store_contract,
    blobs: (Arc<dyn BlobStore>, TestDatabase) = blobs_on
);
