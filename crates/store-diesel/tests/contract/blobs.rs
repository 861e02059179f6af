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

/// What a sweep of orphaned files pages through (issue 31 §5 adds it to the port as
/// `list_stored_before`; its contract, run here on the adapter's own method): a folder is a
/// byte prefix, listings come in bytewise key order from after the last key seen, only what
/// was stored before the time asked for, nothing deleted.
async fn listings_name_what_was_stored_before_a_time_under_a_folder(database: TestDatabase) {
    use std::time::Duration;

    use idconsent_kernel::{BlobError, Clock, ManualClock, Timestamp};

    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_790_000_000_000)));
    let store = DieselBlobStore::new(database.db.clone(), clock.clone());
    let hour = Duration::from_secs(3600);
    let keys = |listed: Vec<(String, Timestamp)>| -> Vec<String> {
        listed.into_iter().map(|(key, _)| key).collect()
    };
    let stored = [
        "listed/a/front",
        "listed/b/selfie",
        "listed/b_c/x",
        "listed/bzc/y",
        "listed/idv_a/selfie",
        "listed/idv_b/selfie",
    ];
    for key in stored {
        store.put(key, b"face".to_vec()).await.unwrap();
    }
    // Next to the folder, not in it; and one stored an hour later.
    store.put("listed-sibling/z", b"x".to_vec()).await.unwrap();
    clock.advance(hour);
    store.put("listed/later", b"x".to_vec()).await.unwrap();
    let now = clock.now();

    let everything = store
        .stored_before_page("listed/", now, None, 100)
        .await
        .unwrap();
    assert_eq!(keys(everything.clone()), stored);
    assert!(
        everything.iter().all(|(_, at)| *at == now.minus(hour)),
        "{everything:?}"
    );
    assert_eq!(
        keys(
            store
                .stored_before_page("listed/", now.plus(hour), None, 100)
                .await
                .unwrap()
        )
        .len(),
        stored.len() + 1,
        "the later one too, once the time asked for is after it"
    );
    assert!(
        store
            .stored_before_page("listed/", now.minus(hour), None, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // A folder is a byte prefix: `_` is no wildcard, `b/` is not `b_c/`.
    assert_eq!(
        keys(
            store
                .stored_before_page("listed/b_c/", now, None, 100)
                .await
                .unwrap()
        ),
        ["listed/b_c/x"]
    );
    assert_eq!(
        keys(
            store
                .stored_before_page("listed/b/", now, None, 100)
                .await
                .unwrap()
        ),
        ["listed/b/selfie"]
    );
    // Pages of two, each from after the last key seen.
    let mut seen: Vec<String> = Vec::new();
    loop {
        let page = store
            .stored_before_page("listed/", now, seen.last().map(String::as_str), 2)
            .await
            .unwrap();
        let short = page.len() < 2;
        seen.extend(keys(page));
        if short {
            break;
        }
    }
    assert_eq!(seen, stored);
    assert!(
        store
            .stored_before_page("listed/", now, None, 0)
            .await
            .unwrap()
            .is_empty()
    );
    // Deleted: not listed; a put makes an object young again.
    store.delete("listed/a/front").await.unwrap();
    store
        .put("listed/b/selfie", b"again".to_vec())
        .await
        .unwrap();
    assert_eq!(
        keys(
            store
                .stored_before_page("listed/", now, None, 100)
                .await
                .unwrap()
        ),
        stored[2..]
    );
    for bad in ["listed", "", "/etc/", "a/../", "a b/"] {
        assert!(
            matches!(
                store.stored_before_page(bad, now, None, 10).await,
                Err(BlobError::InvalidKey)
            ),
            "{bad}"
        );
    }
}

on_both_backends!(listings_name_what_was_stored_before_a_time_under_a_folder);
