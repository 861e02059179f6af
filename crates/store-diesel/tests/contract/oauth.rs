use std::sync::Arc;

use idconsent_consent::SessionRepository;
use idconsent_oauth::ports::OAuthRepository;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselOAuthStore, DieselSessionStore};

type Made = (
    Arc<dyn OAuthRepository>,
    Arc<dyn SessionRepository>,
    TestDatabase,
);

fn store_on(database: TestDatabase) -> Made {
    (
        Arc::new(DieselOAuthStore::new(database.db.clone())),
        Arc::new(DieselSessionStore::new(database.db.clone())),
        database,
    )
}

contract_on_both_backends!(
    idconsent_oauth::oauth_repository_contract,
    store: Made = store_on
);

/// The OAuth signing keys every process shares.
mod signing_keys {
    use std::sync::Arc;

    use idconsent_oauth::SigningKeyStore;
    use idconsent_store_diesel::DieselSigningKeyStore;
    use idconsent_store_diesel::testing::TestDatabase;

    fn store_on(database: TestDatabase) -> (Arc<dyn SigningKeyStore>, TestDatabase) {
        (
            Arc::new(DieselSigningKeyStore::new(database.db.clone())),
            database,
        )
    }

    contract_on_both_backends!(
        idconsent_oauth::signing_key_store_contract,
        store: (Arc<dyn SigningKeyStore>, TestDatabase) = store_on
    );
}
