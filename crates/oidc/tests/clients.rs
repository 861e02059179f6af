//! The client configuration service on the in-memory store with the real keyed hash.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use idconsent_kernel::id::{ApplicationId, MerchantId};
use idconsent_kernel::{
    Environment, IdGenerator, ManualClock, OsRandom, SystemClock, Timestamp, UlidGenerator,
};
use idconsent_oidc::testing::{FixedApplications, InMemoryClients};
use idconsent_oidc::{
    AuthMethod, ClientApplication, ClientAuthError, ClientInput, ClientManager, OidcClientError,
    OidcClients, PresentedCredentials,
};
use idconsent_vault_ring::{HmacKeyedHash, MasterKey};

struct World {
    clients: OidcClients,
    applications: Arc<FixedApplications>,
    owner: ClientManager,
    app: ApplicationId,
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

fn world(environment: Environment) -> World {
    let applications = Arc::new(FixedApplications::default());
    let merchant: MerchantId = ids().next();
    let app: ApplicationId = ids().next();
    applications.add(ClientApplication {
        id: app.clone(),
        merchant_id: merchant.clone(),
        environment,
        client_key: ids().next(),
        allowed_intents: vec![idconsent_kernel::Intent::Oauth],
        callback_url: "https://shop.example/events".into(),
    });
    let clients = OidcClients::new(
        Arc::new(InMemoryClients::default()),
        applications.clone(),
        Arc::new(HmacKeyedHash::new(&MasterKey::new([7; 32]))),
        Arc::new(OsRandom),
        Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000))),
    );
    World {
        clients,
        applications,
        owner: ClientManager {
            merchant_id: merchant,
            may_configure: true,
        },
        app,
    }
}

fn input(method: &str) -> ClientInput {
    ClientInput {
        redirect_uris: vec!["http://localhost:4000/cb".into()],
        token_endpoint_auth_method: method.into(),
        ..ClientInput::default()
    }
}

fn basic(app: &ApplicationId, secret: &str) -> PresentedCredentials {
    PresentedCredentials::Basic {
        client_id: app.as_str().to_owned(),
        secret: secret.to_owned(),
    }
}

#[tokio::test]
async fn the_secret_is_shown_once_and_authenticates_by_the_registered_method_only() {
    let w = world(Environment::Sandbox);
    let first = w
        .clients
        .configure(&w.owner, w.app.as_str(), input("client_secret_basic"))
        .await
        .unwrap();
    let secret = first.secret.expect("first configuration shows the secret");
    assert!(secret.starts_with("ocs_") && secret.len() == 68);
    let again = w
        .clients
        .configure(&w.owner, w.app.as_str(), input("client_secret_basic"))
        .await
        .unwrap();
    assert_eq!(again.secret, None);

    let client = w
        .clients
        .authenticate(&basic(&w.app, &secret))
        .await
        .unwrap();
    assert_eq!(client.application.id, w.app);
    let post = PresentedCredentials::Post {
        client_id: w.app.as_str().to_owned(),
        secret: secret.clone(),
    };
    assert!(matches!(
        w.clients.authenticate(&post).await,
        Err(ClientAuthError::InvalidClient)
    ));
    // The last hex digit changed.
    let last = if secret.ends_with('0') { '1' } else { '0' };
    let wrong = format!("{}{last}", &secret[..67]);
    assert!(matches!(
        w.clients.authenticate(&basic(&w.app, &wrong)).await,
        Err(ClientAuthError::InvalidClient)
    ));
    assert!(matches!(
        w.clients.authenticate(&basic(&ids().next(), &secret)).await,
        Err(ClientAuthError::InvalidClient)
    ));
}

#[tokio::test]
async fn a_rotated_secret_stops_at_once() {
    let w = world(Environment::Sandbox);
    let old = w
        .clients
        .configure(&w.owner, w.app.as_str(), input("client_secret_post"))
        .await
        .unwrap()
        .secret
        .unwrap();
    let new = w
        .clients
        .rotate_secret(&w.owner, w.app.as_str())
        .await
        .unwrap()
        .secret
        .unwrap();
    assert_ne!(old, new);
    let post = |secret: &str| PresentedCredentials::Post {
        client_id: w.app.as_str().to_owned(),
        secret: secret.to_owned(),
    };
    assert!(w.clients.authenticate(&post(&old)).await.is_err());
    assert!(w.clients.authenticate(&post(&new)).await.is_ok());
}

#[tokio::test]
async fn another_merchant_sees_nothing_and_only_owners_and_admins_configure() {
    let w = world(Environment::Sandbox);
    let stranger = ClientManager {
        merchant_id: ids().next(),
        may_configure: true,
    };
    for result in [
        w.clients
            .configure(&stranger, w.app.as_str(), input("client_secret_basic"))
            .await
            .err(),
        w.clients
            .rotate_secret(&stranger, w.app.as_str())
            .await
            .err(),
        w.clients.read(&stranger, w.app.as_str()).await.err(),
        w.clients.read(&w.owner, "app_!!").await.err(),
    ] {
        assert!(
            matches!(result, Some(OidcClientError::NotFound(_))),
            "{result:?}"
        );
    }
    let developer = ClientManager {
        may_configure: false,
        ..w.owner.clone()
    };
    assert!(matches!(
        w.clients
            .configure(&developer, w.app.as_str(), input("client_secret_basic"))
            .await,
        Err(OidcClientError::Forbidden(_))
    ));
    // Reading is not configuring: a developer reads what exists.
    w.clients
        .configure(&w.owner, w.app.as_str(), input("client_secret_basic"))
        .await
        .unwrap();
    let read = w.clients.read(&developer, w.app.as_str()).await.unwrap();
    assert_eq!(read.auth_method, AuthMethod::ClientSecretBasic);
}

#[tokio::test]
async fn a_live_application_may_not_redirect_to_localhost() {
    let w = world(Environment::Live);
    let refused = w
        .clients
        .configure(&w.owner, w.app.as_str(), input("client_secret_basic"))
        .await;
    let Err(OidcClientError::Invalid(errors)) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(errors.fields()[0].field, "redirectUris[0]");
    assert!(matches!(
        w.clients.read(&w.owner, w.app.as_str()).await,
        Err(OidcClientError::NotFound(_))
    ));
    let _ = &w.applications;
}

#[tokio::test]
async fn rotating_before_configuring_is_404() {
    let w = world(Environment::Sandbox);
    assert!(matches!(
        w.clients.rotate_secret(&w.owner, w.app.as_str()).await,
        Err(OidcClientError::NotFound(_))
    ));
}
