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

contract_on_both_backends!(
    idconsent_qrcode::qr_code_store_contract,
    store: (Arc<dyn QrCodeRepository>, TestDatabase) = on
);
