//! Start-up re-sealing (ADR 0026): secrets sealed before bindings existed are re-sealed for
//! their rows, once, in one transaction — on both backends.

use std::sync::Arc;

use diesel::RunQueryDsl;
use idconsent_kernel::id::{ApplicationId, TypedId};
use idconsent_kernel::{Environment, Sealed, SealedFor, SecretVault};
use idconsent_merchant::model::sealing;
use idconsent_oauth::sealed_signing_key;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{AnyConnection, ResealError, reseal_legacy_secrets};
use idconsent_vault_ring::{AesGcmVault, MasterKey};

#[derive(diesel::QueryableByName)]
struct Text {
    #[diesel(sql_type = diesel::sql_types::Text)]
    value: String,
}

async fn text(database: &TestDatabase, sql: &str) -> Sealed {
    let sql = sql.to_owned();
    let rows = database
        .db
        .read(move |conn| {
            Ok(match conn {
                AnyConnection::Sqlite(c) => diesel::sql_query(sql).load::<Text>(c)?,
                AnyConnection::Postgres(c) => diesel::sql_query(sql).load::<Text>(c)?,
            })
        })
        .await
        .unwrap();
    Sealed::from_stored(rows.into_iter().next().expect("one row").value)
}

/// A merchant and one application whose secrets, API key and a signing key are all sealed in
/// the legacy format (`secret` as given, to plant an unreadable one).
async fn legacy_rows(database: &TestDatabase, vault: &AesGcmVault, tag: &str, secret: &Sealed) {
    let legacy = |plain: &str| vault.seal_legacy(plain.as_bytes()).as_str().to_owned();
    database
        .execute(format!(
            "INSERT INTO merchants (id, business_name, contact_name, entity_type, industry, \
             email, phone, registered_name, registration_number, date_registered, \
             registry_status, status, created_at, updated_at) VALUES ('mer_{tag}', 'Shop', \
             'Ada', 'company', 'retail', '{tag}@shop.example', '+15551234567', 'Shop Ltd', \
             '12345678', '2020-01-01', 'matched', 'live', 1, 1)"
        ))
        .await;
    database
        .execute(format!(
            "INSERT INTO applications (id, merchant_id, client_id, name, callback_url, \
             redirect_uris, request_types, secret, previous_secret, previous_secret_expires_at, \
             webhook_secret, created_at, updated_at) VALUES ('app_{tag}', 'mer_{tag}', \
             'cli_{tag}', 'Checkout', 'https://shop.example/hooks', '[]', '[\"LOGIN\"]', \
             '{}', '{}', 99, '{}', 1, 1)",
            secret.as_str(),
            legacy("sk_previous"),
            legacy("whsec_current"),
        ))
        .await;
    database
        .execute(format!(
            "INSERT INTO api_credentials (application_id, environment, key_hash, key_sealed, \
             generated_at) VALUES ('app_{tag}', 'live', 'hash_{tag}', '{}', 1)",
            legacy("mk_live_key")
        ))
        .await;
    database
        .execute(format!(
            "INSERT INTO oauth_signing_keys (kid, sealed_key, created_at, activates_at) \
             VALUES ('kid_{tag}', '{}', 1, 1)",
            legacy("-----BEGIN PRIVATE KEY-----")
        ))
        .await;
}

fn opened(vault: &AesGcmVault, sealed: &Sealed, binding: SealedFor<'_>) -> String {
    String::from_utf8(vault.open(sealed, binding).expect("opens for its row")).unwrap()
}

async fn legacy_secrets_are_resealed_for_their_rows_once(database: TestDatabase) {
    let vault = Arc::new(AesGcmVault::new(&MasterKey::new([7; 32])));
    legacy_rows(&database, &vault, "one", &vault.seal_legacy(b"sk_current")).await;

    let resealed = reseal_legacy_secrets(&database.db, vault.clone())
        .await
        .unwrap();
    assert_eq!(resealed, 5);
    let app = ApplicationId::from_trusted("app_one".into());
    let column = |name: &str| format!("SELECT {name} AS value FROM applications");
    let secret = text(&database, &column("secret")).await;
    assert_eq!(
        opened(&vault, &secret, sealing::request_secret(&app)),
        "sk_current"
    );
    let previous = text(&database, &column("previous_secret")).await;
    assert_eq!(
        opened(&vault, &previous, sealing::request_secret(&app)),
        "sk_previous"
    );
    let webhook = text(&database, &column("webhook_secret")).await;
    assert_eq!(
        opened(&vault, &webhook, sealing::webhook_secret(&app)),
        "whsec_current"
    );
    let key = text(&database, "SELECT key_sealed AS value FROM api_credentials").await;
    let live = sealing::api_key(&app, Environment::Live);
    assert_eq!(opened(&vault, &key, live), "mk_live_key");
    let pem = text(
        &database,
        "SELECT sealed_key AS value FROM oauth_signing_keys",
    )
    .await;
    assert_eq!(
        opened(&vault, &pem, sealed_signing_key("kid_one")),
        "-----BEGIN PRIVATE KEY-----"
    );
    // Bound to its row: the request secret does not open as another application's, nor as the
    // webhook secret.
    let other = ApplicationId::from_trusted("app_two".into());
    assert!(
        vault
            .open(&secret, sealing::request_secret(&other))
            .is_err()
    );
    assert!(vault.open(&secret, sealing::webhook_secret(&app)).is_err());

    // The second start finds nothing to do and changes nothing.
    assert_eq!(
        reseal_legacy_secrets(&database.db, vault.clone())
            .await
            .unwrap(),
        0
    );
    assert_eq!(text(&database, &column("secret")).await, secret);
}

async fn an_unreadable_secret_stops_the_start_and_changes_nothing(database: TestDatabase) {
    let vault = Arc::new(AesGcmVault::new(&MasterKey::new([7; 32])));
    let foreign = AesGcmVault::new(&MasterKey::new([8; 32])).seal_legacy(b"sk_other_key");
    legacy_rows(&database, &vault, "bad", &foreign).await;
    let refused = reseal_legacy_secrets(&database.db, vault.clone()).await;
    assert!(
        matches!(&refused, Err(ResealError::Unreadable { what }) if what == "applications.secret"),
        "{refused:?}"
    );
    let pem = text(
        &database,
        "SELECT sealed_key AS value FROM oauth_signing_keys",
    )
    .await;
    assert!(pem.as_str().starts_with("v1."), "rolled back");
}

on_both_backends!(
    legacy_secrets_are_resealed_for_their_rows_once,
    an_unreadable_secret_stops_the_start_and_changes_nothing,
);
