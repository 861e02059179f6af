//! Applications and credentials.

use super::*;

#[tokio::test]
async fn a_rotated_api_key_stops_working_at_once_and_the_secret_stays() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let created = h.create_application(&owner, "Checkout").await;
    let application = &created.view.application;
    let old_key = created.view.sandbox_api_key.clone();
    assert!(old_key.as_str().starts_with("mk_test_"));
    assert_eq!(created.view.live_api_key, None);
    let found = h
        .store
        .find_by_key_hash(&h.key_hash(&old_key))
        .await
        .unwrap();
    assert_eq!(
        found.map(|(a, env)| (a.id, env)),
        Some((application.id.clone(), Environment::Sandbox))
    );

    h.advance(Duration::from_secs(5));
    let rotated = h
        .service
        .rotate_key(&owner, application.id.as_str(), "sandbox")
        .await
        .unwrap();
    assert_ne!(rotated.api_key, old_key);
    assert_eq!(
        h.store
            .find_by_key_hash(&h.key_hash(&old_key))
            .await
            .unwrap(),
        None
    );
    let (current, environment) = h
        .store
        .find_by_key_hash(&h.key_hash(&rotated.api_key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(environment, Environment::Sandbox);
    assert_eq!(current.secret, application.secret);
    let view = h
        .service
        .application(&owner, application.id.as_str())
        .await
        .unwrap();
    assert_eq!(view.sandbox_api_key, rotated.api_key);

    let live = h
        .service
        .rotate_key(&owner, application.id.as_str(), "live")
        .await;
    assert!(matches!(live, Err(MerchantError::Conflict(_))), "{live:?}");
}

#[tokio::test]
async fn a_rotated_signing_secret_keeps_verifying_for_the_overlap_only() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let created = h.create_application(&owner, "Checkout").await;
    let id = created.view.application.id.clone();

    let rotated = h.service.rotate_secret(&owner, id.as_str()).await.unwrap();
    assert_ne!(rotated.secret, created.secret);
    let overlap = h.service.settings().webhook_secret_overlap;
    assert_eq!(rotated.previous_expires_at, h.now().plus(overlap));

    let open = |at: Timestamp, application: &Application| {
        application
            .request_secrets(at)
            .into_iter()
            .map(|sealed| {
                let plain = h.vault.open(sealed, sealing::request_secret(&id)).unwrap();
                String::from_utf8(plain).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let stored = h.stored_application(&id).await;
    assert_eq!(
        open(h.now(), &stored),
        [rotated.secret.clone(), created.secret.clone()]
    );
    h.advance(overlap);
    assert_eq!(open(h.now(), &stored), [rotated.secret]);

    let webhook = h
        .service
        .rotate_webhook_secret(&owner, id.as_str())
        .await
        .unwrap();
    let stored = h.stored_application(&id).await;
    assert_eq!(stored.signing_webhook_secrets(h.now()).len(), 2);
    assert_eq!(
        h.vault
            .open(&stored.webhook_secret, sealing::webhook_secret(&id))
            .unwrap(),
        webhook.secret.as_bytes()
    );
}
