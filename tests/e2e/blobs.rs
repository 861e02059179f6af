//! Files through an S3-compatible object store (`IDC_BLOB_STORE=s3`): what one process stores,
//! the bucket holds, so every process behind a load balancer reads the same files. Runs when
//! `IDC_TEST_S3_URL` names a server (CI starts `moto`); required when `REQUIRE_BACKENDS` names s3.

use idconsent_e2e::{Backend, TestApp};
use idconsent_kernel::{OsRandom, RandomSource};
use idconsent_server::config::BlobConfig;

async fn uploaded_documents_land_in_the_bucket(backend: Backend) {
    let Ok(url) = std::env::var("IDC_TEST_S3_URL") else {
        let required = std::env::var("REQUIRE_BACKENDS").unwrap_or_default();
        assert!(
            !required.split(',').any(|b| b.trim() == "s3"),
            "REQUIRE_BACKENDS names s3 but IDC_TEST_S3_URL is not set"
        );
        eprintln!("NOTE: S3 tests skipped (set IDC_TEST_S3_URL)");
        return;
    };
    let random: std::sync::Arc<dyn RandomSource> = std::sync::Arc::new(OsRandom);
    let bucket = format!("idc-e2e-{}", random.hex(6));
    let client = reqwest::Client::new();
    assert!(
        client
            .put(format!("{url}/{bucket}"))
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
    let settings = idconsent_blob_s3::S3Settings {
        bucket: bucket.clone(),
        region: "us-east-1".into(),
        endpoint: Some(url.clone()),
        access_key_id: "test".into(),
        secret_access_key: "test".into(),
        prefix: "deployment-a".into(),
    };
    let Some(app) = TestApp::start_with(backend, move |config| {
        config.blobs = BlobConfig::S3(settings);
    })
    .await
    else {
        return;
    };
    let merchant = app.register_merchant().await;
    app.complete_onboarding(&merchant).await;
    // S3's ListObjects (V1) answers XML with one <Key> per object.
    let listing = client
        .get(format!("{url}/{bucket}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let prefix = format!("<Key>deployment-a/merchants/{}/documents/", merchant.id);
    assert_eq!(listing.matches(&prefix).count(), 2, "{listing}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    uploaded_documents_land_in_the_bucket(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    uploaded_documents_land_in_the_bucket(Backend::Postgres).await;
}
