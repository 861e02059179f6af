//! The [`ClientStore`] contract. Adapters run it with `oidc_client_store_contract!(make)`,
//! `make` being an `async fn() -> Option<(Arc<dyn ClientStore>, G)>`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{IdGenerator, OsRandom, SystemClock, Timestamp, UlidGenerator};
use serde_json::json;

use crate::model::{AuthMethod, ClientConfig, DeliveryMode, Profile};
use crate::ports::{
    Authorization, AuthorizationStore, ClientStore, RefreshStore, RefreshToken, RefreshUse,
    StoreError,
};

#[macro_export]
macro_rules! oidc_client_store_contract {
    ($make:path) => {
        $crate::oidc_client_store_contract!(@cases $make;
            a_configuration_comes_back_as_inserted,
            an_unknown_application_has_none,
            an_application_is_configured_once,
            an_update_replaces_the_settings_but_keeps_the_secret_and_creation,
            an_update_or_secret_of_nothing_writes_nothing,
            the_secret_is_replaced_or_removed_alone,
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

fn new_application() -> ApplicationId {
    ids().next()
}

fn config() -> ClientConfig {
    ClientConfig {
        application_id: new_application(),
        redirect_uris: vec![
            "https://shop.example/callback?from=oidc".into(),
            "http://localhost:3000/cb".into(),
        ],
        post_logout_redirect_uris: vec!["https://shop.example/bye".into()],
        auth_method: AuthMethod::ClientSecretBasic,
        jwks: None,
        jwks_uri: None,
        delivery_mode: DeliveryMode::Poll,
        notification_endpoint: None,
        require_par: false,
        dpop_bound: false,
        profile: Profile::Default,
        secret_hash: Some("a".repeat(64)),
        created_at: Timestamp::from_millis(1_763_719_200_000),
        updated_at: Timestamp::from_millis(1_763_719_200_000),
    }
}

/// Every optional setting filled, so each column round-trips.
fn full_config() -> ClientConfig {
    ClientConfig {
        auth_method: AuthMethod::PrivateKeyJwt,
        jwks: Some(
            json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "f83O", "y": "x_FE", "kid": "k1"}]}),
        ),
        jwks_uri: Some("https://shop.example/jwks".into()),
        delivery_mode: DeliveryMode::Ping,
        notification_endpoint: Some("https://shop.example/ciba".into()),
        require_par: true,
        dpop_bound: true,
        profile: Profile::Fapi2,
        secret_hash: None,
        ..config()
    }
}

pub async fn a_configuration_comes_back_as_inserted(store: Arc<dyn ClientStore>) {
    for config in [config(), full_config()] {
        store.insert(&config).await.unwrap();
        assert_eq!(
            store.find(&config.application_id).await.unwrap(),
            Some(config)
        );
    }
}

pub async fn an_unknown_application_has_none(store: Arc<dyn ClientStore>) {
    assert_eq!(store.find(&new_application()).await.unwrap(), None);
}

pub async fn an_application_is_configured_once(store: Arc<dyn ClientStore>) {
    let first = config();
    store.insert(&first).await.unwrap();
    let again = ClientConfig {
        redirect_uris: vec!["https://elsewhere.example/cb".into()],
        secret_hash: Some("b".repeat(64)),
        ..first.clone()
    };
    assert!(matches!(
        store.insert(&again).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(
        store.find(&first.application_id).await.unwrap(),
        Some(first)
    );
}

pub async fn an_update_replaces_the_settings_but_keeps_the_secret_and_creation(
    store: Arc<dyn ClientStore>,
) {
    let first = config();
    store.insert(&first).await.unwrap();
    let changed = ClientConfig {
        secret_hash: None,
        created_at: Timestamp::from_millis(5),
        updated_at: Timestamp::from_millis(1_763_719_300_000),
        ..full_config()
    };
    let changed = ClientConfig {
        application_id: first.application_id.clone(),
        ..changed
    };
    assert!(store.update(&changed).await.unwrap());
    let expected = ClientConfig {
        secret_hash: first.secret_hash.clone(),
        created_at: first.created_at,
        ..changed
    };
    assert_eq!(
        store.find(&first.application_id).await.unwrap(),
        Some(expected)
    );
}

pub async fn an_update_or_secret_of_nothing_writes_nothing(store: Arc<dyn ClientStore>) {
    let absent = config();
    assert!(!store.update(&absent).await.unwrap());
    assert!(
        !store
            .set_secret(&absent.application_id, Some("c"), absent.updated_at)
            .await
            .unwrap()
    );
    assert_eq!(store.find(&absent.application_id).await.unwrap(), None);
}

pub async fn the_secret_is_replaced_or_removed_alone(store: Arc<dyn ClientStore>) {
    let first = config();
    store.insert(&first).await.unwrap();
    let later = Timestamp::from_millis(1_763_719_400_000);
    let hash = "d".repeat(64);
    assert!(
        store
            .set_secret(&first.application_id, Some(&hash), later)
            .await
            .unwrap()
    );
    let found = store.find(&first.application_id).await.unwrap().unwrap();
    assert_eq!(
        found,
        ClientConfig {
            secret_hash: Some(hash),
            updated_at: later,
            ..first.clone()
        }
    );
    assert!(
        store
            .set_secret(&first.application_id, None, later)
            .await
            .unwrap()
    );
    let found = store.find(&first.application_id).await.unwrap().unwrap();
    assert_eq!(found.secret_hash, None);
    assert_eq!(found.redirect_uris, first.redirect_uris);
}

#[macro_export]
macro_rules! oidc_authorization_store_contract {
    ($make:path) => {
        $crate::oidc_authorization_store_contract!(@cases $make;
            an_authorization_comes_back_as_inserted,
            an_unknown_session_has_no_authorization,
            a_session_has_one_authorization,
            a_poll_is_recorded_only_after_the_interval,
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

fn authorization(nonce: Option<&str>) -> Authorization {
    let ids = ids();
    Authorization {
        session_id: ids.next(),
        application_id: ids.next(),
        nonce: nonce.map(str::to_owned),
        backchannel: nonce.is_none(),
        last_polled_at: None,
        created_at: Timestamp::from_millis(1_763_719_200_123),
    }
}

pub async fn a_poll_is_recorded_only_after_the_interval(store: Arc<dyn AuthorizationStore>) {
    let written = authorization(None);
    let interval = std::time::Duration::from_secs(5);
    assert!(
        !store
            .poll(&written.session_id, later(0), interval)
            .await
            .unwrap()
    );
    store.insert(&written).await.unwrap();
    assert!(
        store
            .poll(&written.session_id, later(0), interval)
            .await
            .unwrap()
    );
    assert!(
        !store
            .poll(&written.session_id, later(4_999), interval)
            .await
            .unwrap()
    );
    assert!(
        store
            .poll(&written.session_id, later(5_000), interval)
            .await
            .unwrap()
    );
    let found = store.find(&written.session_id).await.unwrap().unwrap();
    assert_eq!(found.last_polled_at, Some(later(5_000)));
    let polls = (0..6).map(|_| store.poll(&written.session_id, later(20_000), interval));
    let recorded = futures_util::future::join_all(polls)
        .await
        .into_iter()
        .filter(|polled| matches!(polled, Ok(true)))
        .count();
    assert_eq!(recorded, 1);
}

pub async fn an_authorization_comes_back_as_inserted(store: Arc<dyn AuthorizationStore>) {
    for nonce in [Some("n-0S6_WzA2Mj \u{e9}"), None] {
        let written = authorization(nonce);
        store.insert(&written).await.unwrap();
        assert_eq!(
            store.find(&written.session_id).await.unwrap(),
            Some(written)
        );
    }
}

pub async fn an_unknown_session_has_no_authorization(store: Arc<dyn AuthorizationStore>) {
    let absent = authorization(None);
    assert_eq!(store.find(&absent.session_id).await.unwrap(), None);
}

pub async fn a_session_has_one_authorization(store: Arc<dyn AuthorizationStore>) {
    let first = authorization(Some("first"));
    store.insert(&first).await.unwrap();
    let again = Authorization {
        nonce: Some("second".into()),
        ..first.clone()
    };
    assert!(matches!(
        store.insert(&again).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(store.find(&first.session_id).await.unwrap(), Some(first));
}

#[macro_export]
macro_rules! oidc_refresh_store_contract {
    ($make:path) => {
        $crate::oidc_refresh_store_contract!(@cases $make;
            a_refresh_token_is_used_once,
            a_replay_revokes_the_whole_family,
            another_applications_or_an_unknown_token_changes_nothing,
            a_revoked_family_refreshes_no_more,
            a_refresh_hash_is_stored_once,
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn of_concurrent_uses_exactly_one_is_fresh() {
            let Some((store, _guard)) = $make().await else { return };
            $crate::contract::of_concurrent_uses_exactly_one_is_fresh(store).await;
        }
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

fn refresh(family: &str, application: &ApplicationId) -> RefreshToken {
    let random = OsRandom;
    RefreshToken {
        hash: (&random as &dyn idconsent_kernel::RandomSource).hex(32),
        family: family.to_owned(),
        application_id: application.clone(),
        root_token_id: "at_root".into(),
        issued_at: Timestamp::from_millis(1_763_719_200_000),
        expires_at: Timestamp::from_millis(1_766_311_200_000),
        used_at: None,
        revoked_at: None,
    }
}

fn family() -> String {
    let random = OsRandom;
    format!(
        "cs_{}",
        (&random as &dyn idconsent_kernel::RandomSource).hex(16)
    )
}

fn later(ms: i64) -> Timestamp {
    Timestamp::from_millis(1_763_719_200_000 + ms)
}

pub async fn a_refresh_token_is_used_once(store: Arc<dyn RefreshStore>) {
    let app = new_application();
    let token = refresh(&family(), &app);
    store.insert_refresh(&token).await.unwrap();
    assert_eq!(
        store
            .use_refresh(&token.hash, &app, later(10))
            .await
            .unwrap(),
        RefreshUse::Fresh(token.clone())
    );
    let stored = store.find_refresh(&token.hash).await.unwrap().unwrap();
    assert_eq!(stored.used_at, Some(later(10)));
    assert_eq!(
        store
            .use_refresh(&token.hash, &app, later(20))
            .await
            .unwrap(),
        RefreshUse::Replayed
    );
}

pub async fn a_replay_revokes_the_whole_family(store: Arc<dyn RefreshStore>) {
    let app = new_application();
    let family = family();
    let first = refresh(&family, &app);
    let second = refresh(&family, &app);
    let other = refresh(&self::family(), &app);
    for token in [&first, &second, &other] {
        store.insert_refresh(token).await.unwrap();
    }
    store
        .use_refresh(&first.hash, &app, later(10))
        .await
        .unwrap();
    assert_eq!(
        store
            .use_refresh(&first.hash, &app, later(20))
            .await
            .unwrap(),
        RefreshUse::Replayed
    );
    // The rotated successor dies with it; another family does not.
    assert_eq!(
        store
            .use_refresh(&second.hash, &app, later(30))
            .await
            .unwrap(),
        RefreshUse::Replayed
    );
    let second = store.find_refresh(&second.hash).await.unwrap().unwrap();
    assert_eq!(second.revoked_at, Some(later(20)));
    assert!(matches!(
        store
            .use_refresh(&other.hash, &app, later(40))
            .await
            .unwrap(),
        RefreshUse::Fresh(_)
    ));
}

pub async fn another_applications_or_an_unknown_token_changes_nothing(
    store: Arc<dyn RefreshStore>,
) {
    let app = new_application();
    let token = refresh(&family(), &app);
    store.insert_refresh(&token).await.unwrap();
    assert_eq!(
        store
            .use_refresh(&token.hash, &new_application(), later(10))
            .await
            .unwrap(),
        RefreshUse::Unknown
    );
    assert_eq!(
        store
            .use_refresh("0".repeat(64).as_str(), &app, later(10))
            .await
            .unwrap(),
        RefreshUse::Unknown
    );
    assert!(
        !store
            .revoke_family(&token.family, &new_application(), later(10))
            .await
            .unwrap()
    );
    assert_eq!(store.find_refresh(&token.hash).await.unwrap(), Some(token));
}

pub async fn a_revoked_family_refreshes_no_more(store: Arc<dyn RefreshStore>) {
    let app = new_application();
    let token = refresh(&family(), &app);
    store.insert_refresh(&token).await.unwrap();
    assert!(
        store
            .revoke_family(&token.family, &app, later(5))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke_family(&token.family, &app, later(6))
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .use_refresh(&token.hash, &app, later(10))
            .await
            .unwrap(),
        RefreshUse::Replayed
    );
    let stored = store.find_refresh(&token.hash).await.unwrap().unwrap();
    assert_eq!(stored.revoked_at, Some(later(5)));
}

pub async fn a_refresh_hash_is_stored_once(store: Arc<dyn RefreshStore>) {
    let app = new_application();
    let token = refresh(&family(), &app);
    store.insert_refresh(&token).await.unwrap();
    let again = RefreshToken {
        family: family(),
        ..token.clone()
    };
    assert!(matches!(
        store.insert_refresh(&again).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(store.find_refresh(&token.hash).await.unwrap(), Some(token));
}

pub async fn of_concurrent_uses_exactly_one_is_fresh(store: Arc<dyn RefreshStore>) {
    let app = new_application();
    let token = refresh(&family(), &app);
    store.insert_refresh(&token).await.unwrap();
    let uses = (0..8).map(|i| store.use_refresh(&token.hash, &app, later(i)));
    let fresh = futures_util::future::join_all(uses)
        .await
        .into_iter()
        .filter(|used| matches!(used, Ok(RefreshUse::Fresh(_))))
        .count();
    assert_eq!(fresh, 1);
}
