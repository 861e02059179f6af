//! Challenges and assertions: consumed once, read together, spent all or nothing.

use super::*;

pub async fn a_challenge_is_consumed_once_even_concurrently(stores: Stores) {
    let challenge = challenge(&phone(), at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();
    assert_eq!(
        stores.challenges.find(&challenge.id).await.unwrap(),
        Some(challenge.clone())
    );
    let racers = (0..8).map(|_| {
        let stores = stores.clone();
        let id = challenge.id.clone();
        async move { stores.challenges.consume(&id, at(1_000)).await.unwrap() }
    });
    let won = join_all(racers)
        .await
        .into_iter()
        .filter(|won| *won)
        .count();
    assert_eq!(won, 1);
    let stored = stores
        .challenges
        .find(&challenge.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.used_at, Some(at(1_000)));
}

pub async fn an_assertion_reads_challenge_device_and_user_together(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let challenge = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();

    let read = stores
        .challenges
        .read_assertion(&challenge.id, Some(&device.credential_id))
        .await
        .unwrap();
    assert_eq!(
        read,
        AssertionInputs {
            challenge: Some(challenge.clone()),
            device: Some(device.clone()),
            user: Some(user.clone()),
        }
    );
    let without_credential = stores
        .challenges
        .read_assertion(&challenge.id, None)
        .await
        .unwrap();
    assert_eq!(without_credential.challenge, Some(challenge.clone()));
    assert_eq!(
        (without_credential.device, without_credential.user),
        (None, None)
    );
    let unknown = stores
        .challenges
        .read_assertion(&ids().next(), Some("unknown-credential"))
        .await
        .unwrap();
    assert_eq!(
        unknown,
        AssertionInputs {
            challenge: None,
            device: None,
            user: None,
        }
    );
}

pub async fn spending_an_assertion_is_all_or_nothing(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let spend = |challenge: &Challenge, counter: u32, when: i64| {
        let stores = stores.clone();
        let (challenge, device) = (challenge.id.clone(), device.id.clone());
        async move {
            stores
                .challenges
                .spend_assertion(&challenge, &device, counter, at(when))
                .await
                .unwrap()
        }
    };
    let first = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&first).await.unwrap();

    // A counter that does not advance (stored 3): the challenge stays unused.
    assert_eq!(spend(&first, 3, 10).await, Spent::DeviceRefused);
    let stored = stores.challenges.find(&first.id).await.unwrap().unwrap();
    assert_eq!(stored.used_at, None, "rolled back");

    assert_eq!(spend(&first, 5, 20).await, Spent::Spent);
    let stored = stores.challenges.find(&first.id).await.unwrap().unwrap();
    assert_eq!(stored.used_at, Some(at(20)));
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (5, Some(at(20))));

    // A used challenge: the device is left alone.
    assert_eq!(spend(&first, 6, 30).await, Spent::ChallengeUnusable);
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (5, Some(at(20))));

    // An expired challenge, and an unknown one.
    let expired = challenge(&user.phone, at(40));
    stores.challenges.insert(&expired).await.unwrap();
    assert_eq!(spend(&expired, 6, 40).await, Spent::ChallengeUnusable);
    let unknown = challenge(&user.phone, at(120_000));
    assert_eq!(spend(&unknown, 6, 40).await, Spent::ChallengeUnusable);

    // A blocked device: the challenge stays unused.
    let live = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&live).await.unwrap();
    stores
        .devices
        .set_status(
            &device.id,
            &[DeviceStatus::Active],
            DeviceStatus::Blocked,
            at(50),
            &Effects::default(),
        )
        .await
        .unwrap();
    assert_eq!(spend(&live, 6, 60).await, Spent::DeviceRefused);
    let stored = stores.challenges.find(&live.id).await.unwrap().unwrap();
    assert_eq!(stored.used_at, None);
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!(stored.counter, 5);
}

pub async fn an_assertion_is_spent_once_even_concurrently(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let challenge = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();
    let racers = (0..8u32).map(|n| {
        let stores = stores.clone();
        let (challenge, device) = (challenge.id.clone(), device.id.clone());
        async move {
            stores
                .challenges
                .spend_assertion(&challenge, &device, 10 + n, at(1_000))
                .await
                .unwrap()
        }
    });
    let outcomes = join_all(racers).await;
    assert_eq!(
        outcomes.iter().filter(|o| **o == Spent::Spent).count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Spent::Spent | Spent::ChallengeUnusable))
    );
}

pub async fn an_expired_challenge_cannot_be_consumed(stores: Stores) {
    let challenge = challenge(&phone(), at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();
    assert!(
        !stores
            .challenges
            .consume(&challenge.id, at(120_000))
            .await
            .unwrap()
    );
}

pub async fn expired_challenges_are_forgotten(stores: Stores) {
    let old = challenge(&phone(), at(1_000));
    let live = challenge(&phone(), at(5_000));
    stores.challenges.insert(&old).await.unwrap();
    stores.challenges.insert(&live).await.unwrap();
    let forgotten = stores.challenges.forget_expired(at(2_000)).await.unwrap();
    assert!(forgotten >= 1);
    assert_eq!(stores.challenges.find(&old.id).await.unwrap(), None);
    assert!(stores.challenges.find(&live.id).await.unwrap().is_some());
}
