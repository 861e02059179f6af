//! The migration folders, the schema module and the database agree, on both backends.

use diesel::RunQueryDsl;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{AnyConnection, Backend, migration_names, schema};

#[test]
fn both_backends_have_the_same_migration_names() {
    let sqlite = migration_names(Backend::Sqlite);
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, migration_names(Backend::Postgres));
}

/// Selects every column of every table, with no rows: a column renamed in a migration but not
/// in `schema.rs` (or the other way round) fails here.
macro_rules! select_all_columns {
    ($conn:expr; $($table:ident),+ $(,)?) => {{
        use diesel::QueryDsl;
        $(
            schema::$table::table
                .select(schema::$table::all_columns)
                .limit(0)
                .execute($conn)?;
        )+
    }};
}

/// Every table, in migration order.
macro_rules! select_every_table {
    ($conn:expr) => {
        select_all_columns!($conn;
            outgoing_messages,
            merchants,
            merchant_users,
            merchant_documents,
            one_time_codes,
            applications,
            api_credentials,
            request_fingerprints,
            idempotency_keys,
            webhook_events,
            webhook_deliveries,
            webhook_attempts,
            consent_sessions,
            end_users,
            enrollments,
            devices,
            fido_challenges,
            refresh_tokens,
            oauth_requests,
            oauth_grants,
            oauth_tokens,
            usage_counters,
            oauth_signing_keys,
            throttle_counters,
            qr_codes,
            signature_requests,
            mandates,
            hosted_confirmations,
            billing_plans,
            rate_budgets,
            api_calls,
            invoices,
            blob_objects,
            blob_chunks,
            identity_sandbox_days,
            chip_challenges,
            oidc_clients,
            oidc_authorizations,
            oidc_refresh_tokens,
        )
    };
}

/// Every table of `schema.rs` can be read with all its columns from a freshly migrated database.
async fn schema_matches_migrations(database: TestDatabase) {
    database
        .db
        .read(|conn| {
            match conn {
                AnyConnection::Sqlite(c) => select_every_table!(c),
                AnyConnection::Postgres(c) => select_every_table!(c),
            }
            Ok(())
        })
        .await
        .unwrap();
}

async fn migrations_run_up_down_and_up_again(database: TestDatabase) {
    let reverted = database.db.revert_all_migrations().unwrap();
    assert_eq!(reverted.len(), migration_names(database.db.backend()).len());
    let reapplied = database.db.migrate().unwrap();
    assert_eq!(reapplied.len(), reverted.len());
    // Idempotent: nothing left to apply.
    assert!(database.db.migrate().unwrap().is_empty());
}

/// Reverts migrations, newest first, until the one named `name` has been reverted.
fn revert_through(database: &TestDatabase, name: &str) {
    for _ in migration_names(database.db.backend()) {
        if database.db.revert_last_migration().unwrap().contains(name) {
            return;
        }
    }
    panic!("no migration named {name} was applied");
}

/// Migration 000010 rebuilds grants and sessions as WITHOUT ROWID tables on SQLite: rows
/// stored before it read the same after it.
async fn grants_and_sessions_survive_their_rebuild(database: TestDatabase) {
    use idconsent_consent::{SessionRepository, SessionStatus};
    use idconsent_kernel::Environment;
    use idconsent_kernel::id::{SessionId, TypedId};
    use idconsent_oauth::SessionState;
    use idconsent_oauth::contract::read_grant;
    use idconsent_oauth::ports::OAuthRepository;
    use idconsent_store_diesel::{DieselOAuthStore, DieselSessionStore};

    revert_through(&database, "clustered_grants_and_sessions");
    database
        .execute(
            "INSERT INTO consent_sessions (id, application_id, client_id, environment, recipient, \
         intent, transaction_type, transaction_description, amount_minor, currency, payee, \
         callback_url, status, created_at, expires_at, decided_at) VALUES ('ses_upgrade', \
         'app_upgrade', 'cli_upgrade', 'live', '+15551234567', 'OAUTH', 'oauth', 'Share', 0, \
         'USD', 'Shop', 'https://shop.example/hooks', 'approved', 1790000000000, \
         1790000300000, 1790000001000)",
        )
        .await;
    database
        .execute(
            "INSERT INTO oauth_grants (code_hash, sealed_code, session_id, application_id, \
         redirect_uri, code_challenge, code_challenge_method, subject, scopes, claims, state, \
         approved_at, expires_at, consumed_at, token_id) VALUES ('hash_upgrade', 'sealed', \
         'ses_upgrade', 'app_upgrade', 'https://shop.example/cb', 'challenge', 'S256', \
         '+15551234567', '[\"openid\"]', '{}', 'xyz', 1790000001000, 1790000601000, NULL, NULL)",
        )
        .await;
    database.db.migrate().unwrap();

    let session = SessionId::from_trusted("ses_upgrade".to_owned());
    let sessions = DieselSessionStore::new(database.db.clone());
    let stored = sessions.find(&session).await.unwrap().unwrap();
    assert_eq!(stored.status, SessionStatus::Approved);
    assert_eq!(stored.recipient.as_str(), "+15551234567");
    let grants = DieselOAuthStore::new(database.db.clone());
    let read = read_grant(&grants, "hash_upgrade").await.unwrap();
    assert_eq!(read.grant.session_id, session);
    assert_eq!(read.grant.scopes, vec!["openid".to_owned()]);
    assert_eq!(
        read.session,
        Some(SessionState {
            status: SessionStatus::Approved,
            environment: Environment::Live,
        })
    );
    assert_eq!(
        grants.grant_of_session(&session).await.unwrap().unwrap(),
        read.grant
    );
}

/// Migration 000011 gives grants a code id: a grant stored before it, whose code has the first
/// format (`ac_` and 64 hex digits), is found under its hash, which is what the service looks up
/// for such a code.
async fn grants_stored_before_code_ids_are_found_by_their_hash(database: TestDatabase) {
    use idconsent_oauth::contract::read_grant;
    use idconsent_store_diesel::DieselOAuthStore;

    revert_through(&database, "code_ids");
    database
        .execute(
            "INSERT INTO oauth_grants (code_hash, sealed_code, session_id, application_id, \
         redirect_uri, code_challenge, code_challenge_method, subject, scopes, claims, state, \
         approved_at, expires_at, consumed_at, token_id) VALUES ('hash_before_ids', 'sealed', \
         'ses_before_ids', 'app_upgrade', 'https://shop.example/cb', 'challenge', 'S256', \
         '+15551234567', '[]', '{}', NULL, 1790000001000, 1790000601000, NULL, NULL)",
        )
        .await;
    database.db.migrate().unwrap();
    let grants = DieselOAuthStore::new(database.db.clone());
    let read = read_grant(&grants, "hash_before_ids").await.unwrap();
    assert_eq!(read.grant.code_id, "hash_before_ids");
    assert_eq!(read.grant.code_hash, "hash_before_ids");
    assert_eq!(read.grant.session_id.as_str(), "ses_before_ids");
}

/// Migration 000009 rewrites remembered signatures to "<signed at>:<signature>": a request
/// accepted before the upgrade is still a replay after it.
async fn signatures_accepted_before_the_upgrade_stay_used(database: TestDatabase) {
    use idconsent_access::ports::ReplayGuard;
    use idconsent_kernel::Timestamp;
    use idconsent_store_diesel::DieselMerchantStore;

    revert_through(&database, "time_ordered_fingerprints");
    let signed_at: i64 = 1_790_000_000_123;
    let expires_at = signed_at + 300_000;
    database.execute(format!(
            "INSERT INTO request_fingerprints (fingerprint, expires_at) VALUES ('abc123', {expires_at})"
        ),
    )
    .await;
    database.db.migrate().unwrap();
    let guard = DieselMerchantStore::new(database.db.clone());
    let expires = Timestamp::from_millis(expires_at);
    let upgraded = format!("{signed_at:015}:abc123");
    assert!(!guard.first_use(&upgraded, expires).await.unwrap());
    assert!(
        guard
            .first_use(&format!("{signed_at:015}:def456"), expires)
            .await
            .unwrap()
    );
}

on_both_backends!(
    grants_and_sessions_survive_their_rebuild,
    grants_stored_before_code_ids_are_found_by_their_hash,
    signatures_accepted_before_the_upgrade_stay_used,
    schema_matches_migrations,
    migrations_run_up_down_and_up_again,
);
