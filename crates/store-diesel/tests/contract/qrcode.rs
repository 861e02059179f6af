//! Stored QR codes (`QrCodeRepository`) on both backends.

use std::sync::Arc;

use idconsent_qrcode::QrCodeRepository;
use idconsent_store_diesel::DieselQrCodeStore;
use idconsent_store_diesel::testing::TestDatabase;

fn on(database: TestDatabase) -> (Arc<dyn QrCodeRepository>, TestDatabase) {
    (
        Arc::new(DieselQrCodeStore::new(database.db.clone())),
        database,
    )
}

mod sqlite {
    use super::*;

    async fn store() -> Option<(Arc<dyn QrCodeRepository>, TestDatabase)> {
        Some(on(TestDatabase::sqlite()))
    }

    idconsent_qrcode::qr_code_store_contract!(store);
}

mod postgres {
    use super::*;

    async fn store() -> Option<(Arc<dyn QrCodeRepository>, TestDatabase)> {
        TestDatabase::postgres().map(on)
    }

    idconsent_qrcode::qr_code_store_contract!(store);
}
