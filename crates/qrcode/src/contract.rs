//! The [`QrCodeRepository`] contract. Adapters run it with `qr_code_store_contract!(make)`,
//! `make` being an `async fn() -> Option<(Arc<dyn QrCodeRepository>, G)>`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use idconsent_kernel::id::{ApplicationId, QrCodeId};
use idconsent_kernel::{
    Environment, ErrorCorrection, IdGenerator, OsRandom, QrFormat, QrOptions, SystemClock,
    Timestamp, UlidGenerator,
};

use crate::model::StoredQr;
use crate::ports::{QrCodeRepository, StoreError};

#[macro_export]
macro_rules! qr_code_store_contract {
    ($make:path) => {
        $crate::qr_code_store_contract!(@cases $make;
            a_code_comes_back_as_inserted_whatever_its_expiry,
            an_unknown_code_is_none,
            an_id_is_inserted_once,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                let Some((store, _guard)) = $make().await else { return };
                $crate::contract::$case(store).await;
            }
        )*
    };
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

fn code(expires_at: i64) -> StoredQr {
    StoredQr {
        id: ids().next::<QrCodeId>(),
        application_id: ids().next::<ApplicationId>(),
        environment: Environment::Live,
        data: "https://shop.example/pay?order=42&note=caf\u{e9}".into(),
        format: QrFormat::Svg,
        options: QrOptions {
            size: 512,
            error_correction: ErrorCorrection::Quartile,
        },
        created_at: Timestamp::from_millis(1_763_719_200_000),
        expires_at: Timestamp::from_millis(expires_at),
    }
}

pub async fn a_code_comes_back_as_inserted_whatever_its_expiry(store: Arc<dyn QrCodeRepository>) {
    for expires_at in [1_763_719_260_000, 1_000] {
        let code = code(expires_at);
        store.insert(&code).await.unwrap();
        assert_eq!(store.find(&code.id).await.unwrap(), Some(code));
    }
}

pub async fn an_unknown_code_is_none(store: Arc<dyn QrCodeRepository>) {
    assert_eq!(store.find(&ids().next()).await.unwrap(), None);
}

pub async fn an_id_is_inserted_once(store: Arc<dyn QrCodeRepository>) {
    let first = code(1_763_719_260_000);
    store.insert(&first).await.unwrap();
    let again = StoredQr {
        data: "something else".into(),
        ..first.clone()
    };
    let duplicate = store.insert(&again).await;
    assert!(
        matches!(duplicate, Err(StoreError::Duplicate)),
        "{duplicate:?}"
    );
    assert_eq!(store.find(&first.id).await.unwrap(), Some(first));
}
