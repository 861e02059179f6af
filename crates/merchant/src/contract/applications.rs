//! [`ApplicationRepository`](crate::ports::ApplicationRepository): applications and their credentials.

use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{Environment, PageRequest};

use crate::model::{KeyRecord, MerchantStatus, RequestTypes, RetiringSecret};
use crate::ports::{RepositoryError, conflicts};

use super::MerchantStores;
use super::fixtures::*;

pub async fn applications_come_back_with_their_current_keys(stores: MerchantStores) {
    let (onboarding, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let sandbox_only = stored_application(&stores, &onboarding, at(10)).await;
    assert_eq!(sandbox_only.application.live_key, None);
    assert_eq!(
        stores
            .applications
            .find(&sandbox_only.application.id)
            .await
            .unwrap(),
        Some(sandbox_only.application.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&sandbox_only.sandbox_hash)
            .await
            .unwrap(),
        Some((sandbox_only.application.clone(), Environment::Sandbox))
    );

    let (live, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let both = stored_application(&stores, &live, at(20)).await;
    assert!(both.application.live_key.is_some());
    assert_eq!(
        stores
            .applications
            .find(&both.application.id)
            .await
            .unwrap(),
        Some(both.application.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(both.live_hash.as_deref().unwrap())
            .await
            .unwrap(),
        Some((both.application.clone(), Environment::Live))
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&both.sandbox_hash)
            .await
            .unwrap(),
        Some((both.application.clone(), Environment::Sandbox))
    );

    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&random_hex(32))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .applications
            .find(&ids().next::<ApplicationId>())
            .await
            .unwrap(),
        None
    );
}

/// Lookups arriving together (a store may answer them in one batch) each get their own
/// answer: repeated keys, keys of two environments and applications, an unknown key, and a key
/// rotated away just before.
pub async fn concurrent_key_lookups_each_find_their_own(stores: MerchantStores) {
    let (live, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let first = stored_application(&stores, &live, at(10)).await;
    let second = stored_application(&stores, &live, at(20)).await;
    let rotated = second.sandbox_hash.clone();
    let replacement = new_key(Environment::Sandbox, at(30));
    stores
        .applications
        .rotate_key(&second.application.id, &replacement)
        .await
        .unwrap();
    let second_now = stores
        .applications
        .find(&second.application.id)
        .await
        .unwrap()
        .unwrap();
    let unknown = random_hex(32);
    let first_live = first.live_hash.clone().unwrap();
    let asked: Vec<(&str, Option<(crate::model::Application, Environment)>)> = vec![
        (
            &first.sandbox_hash,
            Some((first.application.clone(), Environment::Sandbox)),
        ),
        (
            &first_live,
            Some((first.application.clone(), Environment::Live)),
        ),
        (
            &replacement.hash,
            Some((second_now.clone(), Environment::Sandbox)),
        ),
        (&unknown, None),
        (&rotated, None),
        (
            &first.sandbox_hash,
            Some((first.application.clone(), Environment::Sandbox)),
        ),
        (&replacement.hash, Some((second_now, Environment::Sandbox))),
    ];
    let answers = futures_util::future::join_all(
        asked
            .iter()
            .map(|(hash, _)| stores.applications.find_by_key_hash(hash)),
    )
    .await;
    for ((hash, expected), answer) in asked.iter().zip(answers) {
        assert_eq!(&answer.unwrap(), expected, "{hash}");
    }
}

pub async fn client_ids_and_key_hashes_are_unique(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let first = stored_application(&stores, &merchant, at(10)).await;
    let first_live_hash = first.live_hash.clone().unwrap();

    let same_client_id = {
        let mut new = application(&merchant.id, true, at(20));
        new.application.client_id = first.application.client_id.clone();
        new
    };
    let same_id = {
        let mut new = application(&merchant.id, true, at(20));
        new.application.id = first.application.id.clone();
        new
    };
    let sandbox_hash_taken = NewApplication {
        sandbox_hash: first_live_hash.clone(),
        ..application(&merchant.id, true, at(20))
    };
    let live_hash_taken = NewApplication {
        live_hash: Some(first.sandbox_hash.clone()),
        ..application(&merchant.id, true, at(20))
    };
    for (what, new) in [
        ("client id", &same_client_id),
        ("sandbox key hash", &sandbox_hash_taken),
        ("live key hash", &live_hash_taken),
    ] {
        let created = stores
            .applications
            .create(
                &new.application,
                &new.sandbox_hash,
                new.live_hash.as_deref(),
            )
            .await;
        assert!(
            matches!(created, Err(RepositoryError::Duplicate)),
            "{what}: {created:?}"
        );
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            None,
            "{what}"
        );
    }
    let created = stores
        .applications
        .create(
            &same_id.application,
            &same_id.sandbox_hash,
            same_id.live_hash.as_deref(),
        )
        .await;
    assert!(
        matches!(created, Err(RepositoryError::Duplicate)),
        "{created:?}"
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&first_live_hash)
            .await
            .unwrap(),
        Some((first.application.clone(), Environment::Live))
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&same_id.sandbox_hash)
            .await
            .unwrap(),
        None
    );
}

pub async fn applications_carry_a_live_key_exactly_when_the_merchant_is_live(
    stores: MerchantStores,
) {
    for (status, live_key) in [
        (MerchantStatus::Onboarding, true),
        (MerchantStatus::InReview, true),
        (MerchantStatus::Rejected, true),
        (MerchantStatus::Live, false),
    ] {
        let (merchant, _) = stored_merchant(&stores, status, T0).await;
        let new = application(&merchant.id, live_key, at(10));
        let created = stores
            .applications
            .create(
                &new.application,
                &new.sandbox_hash,
                new.live_hash.as_deref(),
            )
            .await;
        assert!(
            is_conflict(&created, conflicts::WRONG_STATUS),
            "{status:?}, live key {live_key}: {created:?}"
        );
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            None
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&new.sandbox_hash)
                .await
                .unwrap(),
            None
        );
    }
}

pub async fn applications_are_listed_oldest_first_and_paged(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let (other, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let middle = stored_application(&stores, &merchant, at(2_000)).await;
    let oldest = stored_application(&stores, &merchant, at(1_000)).await;
    let newest = stored_application(&stores, &merchant, at(3_000)).await;
    stored_application(&stores, &other, at(500)).await;

    let first_page = PageRequest::new(Some(1), Some(2)).unwrap();
    let page = stores
        .applications
        .list(&merchant.id, first_page)
        .await
        .unwrap();
    assert_eq!((page.total, page.request), (3, first_page));
    assert_eq!(page.items, vec![oldest.application, middle.application]);

    let second_page = PageRequest::new(Some(2), Some(2)).unwrap();
    let page = stores
        .applications
        .list(&merchant.id, second_page)
        .await
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items, vec![newest.application]);

    let (empty, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let page = stores
        .applications
        .list(&empty.id, PageRequest::default())
        .await
        .unwrap();
    assert_eq!((page.total, page.items), (0, vec![]));
}

pub async fn update_saves_the_editable_fields_only(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let original = new.application;

    let mut edited = original.clone();
    edited.name = "Mobile app".into();
    edited.callback_url = url("https://api.shop.example/hooks/idconsent");
    edited.redirect_uris = vec![url("https://m.shop.example/done")];
    edited.request_types = RequestTypes::all();
    edited.updated_at = at(100);
    // Not editable through `update`.
    let mut sent = edited.clone();
    sent.secret = sealed("other-secret");
    sent.webhook_secret = sealed("other-webhook");
    sent.created_at = at(99);
    sent.live_key = Some(KeyRecord {
        sealed: sealed("live"),
        generated_at: at(99),
    });

    stores.applications.update(&sent).await.unwrap();
    assert_eq!(
        stores.applications.find(&original.id).await.unwrap(),
        Some(edited)
    );
}

pub async fn rotating_a_key_replaces_it_and_the_old_hash_stops_matching(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let mut expected = new.application.clone();

    let sandbox = new_key(Environment::Sandbox, at(100));
    stores
        .applications
        .rotate_key(&expected.id, &sandbox)
        .await
        .unwrap();
    expected.sandbox_key = record(&sandbox);
    assert_eq!(
        stores.applications.find(&expected.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&new.sandbox_hash)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&sandbox.hash)
            .await
            .unwrap(),
        Some((expected.clone(), Environment::Sandbox))
    );

    let live = new_key(Environment::Live, at(200));
    stores
        .applications
        .rotate_key(&expected.id, &live)
        .await
        .unwrap();
    expected.live_key = Some(record(&live));
    assert_eq!(
        stores.applications.find(&expected.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(new.live_hash.as_deref().unwrap())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&live.hash)
            .await
            .unwrap(),
        Some((expected.clone(), Environment::Live))
    );
    // The other environment's key is untouched.
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&sandbox.hash)
            .await
            .unwrap(),
        Some((expected, Environment::Sandbox))
    );
}

pub async fn rotating_live_without_a_live_key_is_a_conflict(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let live = new_key(Environment::Live, at(100));
    let rotated = stores
        .applications
        .rotate_key(&new.application.id, &live)
        .await;
    assert!(
        is_conflict(&rotated, conflicts::NO_LIVE_CREDENTIALS),
        "{rotated:?}"
    );
    assert_eq!(
        stores.applications.find(&new.application.id).await.unwrap(),
        Some(new.application)
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&live.hash)
            .await
            .unwrap(),
        None
    );
}

pub async fn rotating_the_webhook_secret_keeps_the_previous_one_signing(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let original = new.application;

    let first = sealed("webhook-1");
    stores
        .applications
        .rotate_webhook_secret(&original.id, &first, at(86_400_100), at(100))
        .await
        .unwrap();
    let rotated = stores
        .applications
        .find(&original.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rotated.webhook_secret, first);
    assert_eq!(
        rotated.previous_webhook_secret,
        Some(RetiringSecret {
            sealed: original.webhook_secret.clone(),
            expires_at: at(86_400_100),
        })
    );
    assert_eq!(rotated.secret, original.secret);

    let second = sealed("webhook-2");
    stores
        .applications
        .rotate_webhook_secret(&original.id, &second, at(86_400_200), at(200))
        .await
        .unwrap();
    let again = stores
        .applications
        .find(&original.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.webhook_secret, second);
    assert_eq!(
        again.previous_webhook_secret,
        Some(RetiringSecret {
            sealed: first,
            expires_at: at(86_400_200),
        })
    );
}

pub async fn rotating_the_request_secret_keeps_the_previous_one_verifying(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let original = new.application;
    assert_eq!(original.previous_secret, None);

    let first = sealed("sk-1");
    stores
        .applications
        .rotate_secret(&original.id, &first, at(86_400_100), at(100))
        .await
        .unwrap();
    let rotated = stores
        .applications
        .find(&original.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rotated.secret, first);
    assert_eq!(
        rotated.previous_secret,
        Some(RetiringSecret {
            sealed: original.secret.clone(),
            expires_at: at(86_400_100),
        })
    );
    assert_eq!(rotated.webhook_secret, original.webhook_secret);
    assert_eq!(
        rotated.request_secrets(at(86_400_099)),
        [&first, &original.secret]
    );
    assert_eq!(rotated.request_secrets(at(86_400_100)), [&first]);
    // The key lookup of signed requests sees the same secrets.
    let by_key = stores
        .applications
        .find_by_key_hash(&new.sandbox_hash)
        .await
        .unwrap()
        .unwrap()
        .0;
    assert_eq!(by_key.previous_secret, rotated.previous_secret);

    let unknown = stores
        .applications
        .rotate_secret(&ids().next(), &sealed("sk-2"), at(1), at(1))
        .await;
    assert!(
        matches!(unknown, Err(RepositoryError::NotFound)),
        "{unknown:?}"
    );
}
