//! [`MerchantRepository`](crate::ports::MerchantRepository): accounts, documents and the approval.

use futures_util::future::join;
use idconsent_kernel::id::MerchantId;
use idconsent_kernel::{CalendarDate, Environment, PageRequest};

use crate::model::{
    Application, BusinessProfile, Document, DocumentFormat, DocumentStatus, DocumentType,
    IdentityType, Merchant, MerchantStatus, RegistryStatus, Role, UserStatus,
};
use crate::ports::{RepositoryError, conflicts};

use super::MerchantStores;
use super::fixtures::*;

pub async fn merchants_come_back_as_created_with_their_owner(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    assert_eq!(
        stores.merchants.find(&merchant.id).await.unwrap(),
        Some(merchant.clone())
    );
    assert_eq!(
        stores.team.find(&owner.id).await.unwrap(),
        Some(owner.clone())
    );
    assert_eq!(
        stores.team.find_by_email(&owner.email).await.unwrap(),
        Some(owner)
    );
    let unknown = ids().next::<MerchantId>();
    assert_eq!(stores.merchants.find(&unknown).await.unwrap(), None);
}

pub async fn creating_a_merchant_with_a_taken_email_is_duplicate_and_stores_neither(
    stores: MerchantStores,
) {
    let (first, first_owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    // Any member counts, not only owners: an invited developer of the first merchant.
    let invited = member(&first.id, Role::Developer, UserStatus::Invited, at(1));
    stores.team.add(&invited).await.unwrap();
    for taken in [&first_owner.email, &invited.email] {
        let second = Merchant {
            email: taken.clone(),
            ..merchant(MerchantStatus::Onboarding, at(2))
        };
        let second_owner = owner_of(&second);
        let created = stores.merchants.create(&second, &second_owner).await;
        assert!(
            matches!(created, Err(RepositoryError::Duplicate)),
            "{created:?}"
        );
        assert_eq!(stores.merchants.find(&second.id).await.unwrap(), None);
        assert_eq!(stores.team.find(&second_owner.id).await.unwrap(), None);
    }
    assert_eq!(
        stores.team.find_by_email(&first_owner.email).await.unwrap(),
        Some(first_owner)
    );
}

pub async fn merchants_are_listed_newest_first_and_filtered_by_status(stores: MerchantStores) {
    let (oldest, _) = stored_merchant(&stores, MerchantStatus::Onboarding, at(0)).await;
    let (live, _) = stored_merchant(&stores, MerchantStatus::Live, at(1_000)).await;
    let (newest, _) = stored_merchant(&stores, MerchantStatus::Onboarding, at(2_000)).await;

    let all = stores
        .merchants
        .list(None, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(all.total, 3);
    assert_eq!(
        all.items,
        vec![newest.clone(), live.clone(), oldest.clone()]
    );

    let onboarding = stores
        .merchants
        .list(Some(MerchantStatus::Onboarding), PageRequest::default())
        .await
        .unwrap();
    assert_eq!(onboarding.total, 2);
    assert_eq!(
        onboarding.items.iter().map(|m| &m.id).collect::<Vec<_>>(),
        vec![&newest.id, &oldest.id]
    );

    let second_page = PageRequest::new(Some(2), Some(2)).unwrap();
    let page = stores.merchants.list(None, second_page).await.unwrap();
    assert_eq!((page.total, page.request), (3, second_page));
    assert_eq!(page.items, vec![oldest]);

    let rejected = stores
        .merchants
        .list(Some(MerchantStatus::Rejected), PageRequest::default())
        .await
        .unwrap();
    assert_eq!((rejected.total, rejected.items), (0, vec![]));
}

pub async fn verifications_and_the_profile_are_saved(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    stores
        .merchants
        .mark_email_verified(&merchant.id, at(10))
        .await
        .unwrap();
    stores
        .merchants
        .mark_phone_verified(&merchant.id, at(20))
        .await
        .unwrap();
    let changed = BusinessProfile {
        registered_name: "Acme Payments Nigeria Ltd".into(),
        registration_number: "RC-7654321".into(),
        date_registered: CalendarDate::parse("2020-12-31").unwrap(),
        address: None,
        usecase: Some("Sign-in for merchants' customers".into()),
        description: None,
        identity_type: Some(IdentityType::NationalId),
        identity_number: Some("A12345678".into()),
        registry_status: RegistryStatus::Verified,
        registry_checked_at: Some(at(29)),
    };
    stores
        .merchants
        .save_profile(&merchant.id, &changed, at(30))
        .await
        .unwrap();
    let found = stores.merchants.find(&merchant.id).await.unwrap().unwrap();
    assert_eq!(found.email_verified_at, Some(at(10)));
    assert_eq!(found.phone_verified_at, Some(at(20)));
    assert_eq!(found.profile, changed);
    assert_eq!(
        (
            found.business_name,
            found.email,
            found.status,
            found.created_at
        ),
        (
            merchant.business_name,
            merchant.email,
            merchant.status,
            merchant.created_at
        )
    );
}

pub async fn transition_requires_a_listed_status_and_records_its_time(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let id = &merchant.id;

    let refused = stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::InReview],
            MerchantStatus::Live,
            at(50),
            None,
        )
        .await;
    assert!(
        is_conflict(&refused, conflicts::WRONG_STATUS),
        "{refused:?}"
    );
    assert_eq!(
        stores.merchants.find(id).await.unwrap(),
        Some(merchant.clone())
    );

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::Onboarding, MerchantStatus::Rejected],
            MerchantStatus::InReview,
            at(100),
            None,
        )
        .await
        .unwrap();
    let submitted = stores.merchants.find(id).await.unwrap().unwrap();
    assert_eq!(submitted.status, MerchantStatus::InReview);
    assert_eq!(submitted.submitted_at, Some(at(100)));

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::InReview],
            MerchantStatus::Rejected,
            at(200),
            Some("The registration certificate is unreadable"),
        )
        .await
        .unwrap();
    let rejected = stores.merchants.find(id).await.unwrap().unwrap();
    assert_eq!(rejected.status, MerchantStatus::Rejected);
    assert_eq!(rejected.decided_at, Some(at(200)));
    assert_eq!(
        rejected.rejection_reason.as_deref(),
        Some("The registration certificate is unreadable")
    );

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::Rejected],
            MerchantStatus::InReview,
            at(300),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        stores
            .merchants
            .find(id)
            .await
            .unwrap()
            .unwrap()
            .submitted_at,
        Some(at(300))
    );

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::InReview],
            MerchantStatus::Live,
            at(400),
            None,
        )
        .await
        .unwrap();
    let live = stores.merchants.find(id).await.unwrap().unwrap();
    assert_eq!(live.status, MerchantStatus::Live);
    assert_eq!(live.decided_at, Some(at(400)));
    assert_eq!(live.rejection_reason, None);
}

pub async fn updates_of_an_unknown_merchant_are_not_found(stores: MerchantStores) {
    let unknown = ids().next::<MerchantId>();
    let not_found = |result: Result<(), RepositoryError>| {
        assert!(
            matches!(result, Err(RepositoryError::NotFound)),
            "{result:?}"
        );
    };
    not_found(stores.merchants.mark_email_verified(&unknown, T0).await);
    not_found(stores.merchants.mark_phone_verified(&unknown, T0).await);
    not_found(
        stores
            .merchants
            .save_profile(&unknown, &profile(), T0)
            .await,
    );
    not_found(
        stores
            .merchants
            .transition(
                &unknown,
                &[MerchantStatus::Onboarding],
                MerchantStatus::InReview,
                T0,
                None,
            )
            .await,
    );
    not_found(stores.merchants.approve(&unknown, &[], T0).await);
}

pub async fn documents_are_listed_oldest_first(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let (other, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let later = Document {
        document_type: DocumentType::RepresentativeId,
        format: DocumentFormat::Jpeg,
        file_name: "passport.jpg".into(),
        ..document(&merchant.id, at(2_000))
    };
    let earlier = document(&merchant.id, at(1_000));
    for d in [&later, &earlier, &document(&other.id, at(500))] {
        stores.merchants.add_document(d).await.unwrap();
    }
    assert_eq!(
        stores.merchants.list_documents(&merchant.id).await.unwrap(),
        vec![earlier, later]
    );
    let (empty, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    assert!(
        stores
            .merchants
            .list_documents(&empty.id)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn approval_makes_the_merchant_live_with_verified_documents_and_live_keys(
    stores: MerchantStores,
) {
    // Rejected once, then resubmitted: the old reason must not survive the approval.
    let merchant = Merchant {
        rejection_reason: Some("registration certificate unreadable".into()),
        ..merchant(MerchantStatus::InReview, T0)
    };
    stores
        .merchants
        .create(&merchant, &owner_of(&merchant))
        .await
        .unwrap();
    for offset in [10, 20] {
        stores
            .merchants
            .add_document(&document(&merchant.id, at(offset)))
            .await
            .unwrap();
    }
    let first = stored_application(&stores, &merchant, at(30)).await;
    let second = stored_application(&stores, &merchant, at(40)).await;
    let keys = vec![
        (
            first.application.id.clone(),
            new_key(Environment::Live, at(500)),
        ),
        (
            second.application.id.clone(),
            new_key(Environment::Live, at(500)),
        ),
    ];

    stores
        .merchants
        .approve(&merchant.id, &keys, at(500))
        .await
        .unwrap();

    let approved = stores.merchants.find(&merchant.id).await.unwrap().unwrap();
    assert_eq!(approved.rejection_reason, None);
    assert_eq!(approved.status, MerchantStatus::Live);
    assert_eq!(approved.decided_at, Some(at(500)));
    let documents = stores.merchants.list_documents(&merchant.id).await.unwrap();
    assert_eq!(documents.len(), 2);
    assert!(
        documents
            .iter()
            .all(|d| d.status == DocumentStatus::Verified)
    );
    for (new, (_, key)) in [&first, &second].into_iter().zip(&keys) {
        let expected = Application {
            live_key: Some(record(key)),
            ..new.application.clone()
        };
        assert_eq!(
            stores.applications.find(&expected.id).await.unwrap(),
            Some(expected.clone())
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&key.hash)
                .await
                .unwrap(),
            Some((expected.clone(), Environment::Live))
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&new.sandbox_hash)
                .await
                .unwrap(),
            Some((expected, Environment::Sandbox))
        );
    }

    // A merchant without applications needs no keys.
    let (bare, _) = stored_merchant(&stores, MerchantStatus::InReview, T0).await;
    stores
        .merchants
        .approve(&bare.id, &[], at(600))
        .await
        .unwrap();
    assert_eq!(
        stores
            .merchants
            .find(&bare.id)
            .await
            .unwrap()
            .unwrap()
            .status,
        MerchantStatus::Live
    );
}

pub async fn approval_needs_a_merchant_in_review(stores: MerchantStores) {
    for status in [
        MerchantStatus::Onboarding,
        MerchantStatus::Rejected,
        MerchantStatus::Live,
    ] {
        let (merchant, _) = stored_merchant(&stores, status, T0).await;
        let new = stored_application(&stores, &merchant, at(10)).await;
        let key = new_key(Environment::Live, at(100));
        let approved = stores
            .merchants
            .approve(
                &merchant.id,
                &[(new.application.id.clone(), key.clone())],
                at(100),
            )
            .await;
        assert!(
            is_conflict(&approved, conflicts::WRONG_STATUS),
            "{status:?}: {approved:?}"
        );
        assert_eq!(
            stores.merchants.find(&merchant.id).await.unwrap(),
            Some(merchant)
        );
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            Some(new.application)
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&key.hash)
                .await
                .unwrap(),
            None
        );
    }
}

pub async fn approval_leaving_an_application_without_a_live_key_changes_nothing(
    stores: MerchantStores,
) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::InReview, T0).await;
    let document = document(&merchant.id, at(10));
    stores.merchants.add_document(&document).await.unwrap();
    let keyed = stored_application(&stores, &merchant, at(20)).await;
    let forgotten = stored_application(&stores, &merchant, at(30)).await;
    let key = new_key(Environment::Live, at(100));

    let approved = stores
        .merchants
        .approve(
            &merchant.id,
            &[(keyed.application.id.clone(), key.clone())],
            at(100),
        )
        .await;

    assert!(
        is_conflict(&approved, conflicts::APPLICATIONS_CHANGED),
        "{approved:?}"
    );
    assert_eq!(
        stores.merchants.find(&merchant.id).await.unwrap(),
        Some(merchant.clone())
    );
    assert_eq!(
        stores.merchants.list_documents(&merchant.id).await.unwrap(),
        vec![document]
    );
    for new in [&keyed, &forgotten] {
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            Some(new.application.clone())
        );
    }
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&key.hash)
            .await
            .unwrap(),
        None
    );
}

/// `approve` and `ApplicationRepository::create` race: exactly one wins, and a live merchant
/// never has an application without a live key.
pub async fn approval_and_application_creation_never_interleave(stores: MerchantStores) {
    for round in 0..6 {
        let (merchant, _) = stored_merchant(&stores, MerchantStatus::InReview, at(round)).await;
        let existing = stored_application(&stores, &merchant, at(10)).await;
        let late = application(&merchant.id, false, at(20));
        let keys = [(
            existing.application.id.clone(),
            new_key(Environment::Live, at(100)),
        )];

        let (approved, created) = join(
            stores.merchants.approve(&merchant.id, &keys, at(100)),
            stores.applications.create(
                &late.application,
                &late.sandbox_hash,
                late.live_hash.as_deref(),
            ),
        )
        .await;

        match (&approved, &created) {
            (Ok(()), Err(RepositoryError::Conflict(conflicts::WRONG_STATUS))) => {}
            (Err(RepositoryError::Conflict(conflicts::APPLICATIONS_CHANGED)), Ok(())) => {}
            other => panic!("round {round}: exactly one must win, got {other:?}"),
        }
        let status = stores
            .merchants
            .find(&merchant.id)
            .await
            .unwrap()
            .unwrap()
            .status;
        let applications = stores
            .applications
            .list(&merchant.id, PageRequest::default())
            .await
            .unwrap()
            .items;
        let live = status == MerchantStatus::Live;
        assert_eq!(live, approved.is_ok());
        assert!(
            applications.iter().all(|a| a.live_key.is_some() == live),
            "round {round}: live = {live}, applications = {applications:?}"
        );
    }
}
