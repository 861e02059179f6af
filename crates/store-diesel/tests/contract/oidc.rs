//! OpenID Connect client configurations (`ClientStore`) on both backends.

use std::sync::Arc;

use idconsent_oidc::ClientStore;
use idconsent_store_diesel::DieselOidcClientStore;
use idconsent_store_diesel::testing::TestDatabase;

fn on(database: TestDatabase) -> (Arc<dyn ClientStore>, TestDatabase) {
    (
        Arc::new(DieselOidcClientStore::new(database.db.clone())),
        database,
    )
}

contract_on_both_backends!(
    idconsent_oidc::oidc_client_store_contract,
    store: (Arc<dyn ClientStore>, TestDatabase) = on
);

mod authorizations {
    use std::sync::Arc;

    use idconsent_oidc::AuthorizationStore;
    use idconsent_store_diesel::DieselOidcClientStore;
    use idconsent_store_diesel::testing::TestDatabase;

    fn on(database: TestDatabase) -> (Arc<dyn AuthorizationStore>, TestDatabase) {
        (
            Arc::new(DieselOidcClientStore::new(database.db.clone())),
            database,
        )
    }

    contract_on_both_backends!(
        idconsent_oidc::oidc_authorization_store_contract,
        store: (Arc<dyn AuthorizationStore>, TestDatabase) = on
    );
}

mod refresh_tokens {
    use std::sync::Arc;

    use idconsent_oidc::RefreshStore;
    use idconsent_store_diesel::DieselOidcClientStore;
    use idconsent_store_diesel::testing::TestDatabase;

    fn on(database: TestDatabase) -> (Arc<dyn RefreshStore>, TestDatabase) {
        (
            Arc::new(DieselOidcClientStore::new(database.db.clone())),
            database,
        )
    }

    contract_on_both_backends!(
        idconsent_oidc::oidc_refresh_store_contract,
        store: (Arc<dyn RefreshStore>, TestDatabase) = on
    );
}
