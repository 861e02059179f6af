//! The kernel's BlobStore contract against a real S3 server (`moto` in server mode in CI; any
//! S3-compatible server locally: `IDC_TEST_S3_URL=http://127.0.0.1:5050`). Without the variable
//! the suite is skipped with a note, unless `REQUIRE_BACKENDS` names `s3` (CI), which fails it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use idconsent_blob_s3::{S3BlobStore, S3Settings};
use idconsent_kernel::blob::BlobStore;
use idconsent_kernel::{OsRandom, RandomSource};

async fn store() -> Option<(Arc<dyn BlobStore>, ())> {
    let Ok(url) = std::env::var("IDC_TEST_S3_URL") else {
        let required = std::env::var("REQUIRE_BACKENDS").unwrap_or_default();
        assert!(
            !required.split(',').any(|b| b.trim() == "s3"),
            "REQUIRE_BACKENDS names s3 but IDC_TEST_S3_URL is not set"
        );
        eprintln!("NOTE: S3 tests skipped (set IDC_TEST_S3_URL)");
        return None;
    };
    // A bucket of its own per case (S3's CreateBucket is a PUT of the bucket's path).
    let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
    let bucket = format!("idc-test-{}", random.hex(6));
    let created = reqwest::Client::new()
        .put(format!("{url}/{bucket}"))
        .send()
        .await
        .unwrap();
    assert!(
        created.status().is_success(),
        "creating {bucket}: {created:?}"
    );
    let store = S3BlobStore::new(&S3Settings {
        bucket,
        region: "us-east-1".into(),
        endpoint: Some(url),
        access_key_id: "test".into(),
        secret_access_key: "test".into(),
        prefix: "idconsent".into(),
    })
    .unwrap();
    Some((Arc::new(store), ()))
}

idconsent_kernel::blob_store_contract!(store);
