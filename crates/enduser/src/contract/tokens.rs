//! Refresh tokens: rotation, reuse revoking the family, installations.

use super::*;

pub async fn a_refresh_token_rotates_once_and_reuse_revokes_the_family(stores: Stores) {
    let (_, _, device) = registered(&stores, None).await;
    let first = refresh(&device);
    stores.refresh_tokens.insert(&first).await.unwrap();
    let revoked = |family| {
        let stores = stores.clone();
        async move { stores.refresh_tokens.family_revoked(&family).await.unwrap() }
    };
    assert!(!revoked(first.family.clone()).await);
    assert!(
        !revoked(ids().next()).await,
        "an unknown family is not revoked"
    );

    let successor = next("install-1");
    let Rotation::Rotated(second) = stores
        .refresh_tokens
        .rotate(&first.hash, &successor, at(10))
        .await
        .unwrap()
    else {
        panic!("a live token rotates");
    };
    assert_eq!(second.hash, successor.hash);
    assert_eq!(second.family, first.family);
    assert_eq!(second.user_id, first.user_id);
    assert_eq!(second.device_id, first.device_id);
    assert_eq!(second.expires_at, successor.expires_at);

    // The first token again: reuse. The family, the live successor included, is revoked.
    let reused = stores
        .refresh_tokens
        .rotate(&first.hash, &next("install-1"), at(20))
        .await
        .unwrap();
    assert_eq!(reused, Rotation::Reused(first.family.clone()));
    assert!(revoked(first.family.clone()).await);
    let after = stores
        .refresh_tokens
        .rotate(&second.hash, &next("install-1"), at(30))
        .await
        .unwrap();
    assert_eq!(after, Rotation::Invalid);

    // Concurrent rotations of one live token: exactly one wins.
    let third = refresh(&device);
    stores.refresh_tokens.insert(&third).await.unwrap();
    let racers = (0..6).map(|_| {
        let stores = stores.clone();
        let hash = third.hash.clone();
        async move {
            stores
                .refresh_tokens
                .rotate(&hash, &next("install-1"), at(40))
                .await
                .unwrap()
        }
    });
    let outcomes = join_all(racers).await;
    let rotated = outcomes
        .iter()
        .filter(|o| matches!(o, Rotation::Rotated(_)))
        .count();
    assert_eq!(rotated, 1, "{outcomes:?}");
    let unknown = stores
        .refresh_tokens
        .rotate(&random().hex(64), &next("install-1"), at(50))
        .await
        .unwrap();
    assert_eq!(unknown, Rotation::Invalid);
}

pub async fn a_refresh_token_from_another_installation_is_invalid(stores: Stores) {
    let (_, _, device) = registered(&stores, None).await;
    let token = refresh(&device);
    stores.refresh_tokens.insert(&token).await.unwrap();
    let elsewhere = stores
        .refresh_tokens
        .rotate(&token.hash, &next("install-2"), at(10))
        .await
        .unwrap();
    assert_eq!(elsewhere, Rotation::Invalid);
    // And it changed nothing: the right installation can still use it.
    let home = stores
        .refresh_tokens
        .rotate(&token.hash, &next("install-1"), at(20))
        .await
        .unwrap();
    assert!(matches!(home, Rotation::Rotated(_)), "{home:?}");
}
