//! [`TeamRepository`](crate::ports::TeamRepository): members, removal and login attempts.

use futures_util::future::join_all;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::MerchantUserId;

use crate::login::{LoginAdmission, LoginPolicy};
use crate::model::{MerchantStatus, MerchantUser, Role, UserStatus};
use crate::ports::{RepositoryError, conflicts};

use super::MerchantStores;
use super::fixtures::*;

pub async fn members_come_back_and_emails_are_unique_across_merchants(stores: MerchantStores) {
    let (first, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let (second, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let invited = member(&first.id, Role::Admin, UserStatus::Invited, at(10));
    stores.team.add(&invited).await.unwrap();
    assert_eq!(
        stores.team.find(&invited.id).await.unwrap(),
        Some(invited.clone())
    );

    let same_email = MerchantUser {
        email: invited.email.clone(),
        ..member(&second.id, Role::Viewer, UserStatus::Invited, at(20))
    };
    let added = stores.team.add(&same_email).await;
    assert!(
        matches!(added, Err(RepositoryError::Duplicate)),
        "{added:?}"
    );
    assert_eq!(stores.team.find(&same_email.id).await.unwrap(), None);

    let same_id = MerchantUser {
        id: invited.id.clone(),
        ..member(&first.id, Role::Viewer, UserStatus::Invited, at(30))
    };
    let added = stores.team.add(&same_id).await;
    assert!(
        matches!(added, Err(RepositoryError::Duplicate)),
        "{added:?}"
    );
    assert_eq!(stores.team.find(&invited.id).await.unwrap(), Some(invited));
}

pub async fn finding_by_email_ignores_removed_members(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let admin = member(&merchant.id, Role::Admin, UserStatus::Active, at(10));
    stores.team.add(&admin).await.unwrap();
    assert_eq!(
        stores.team.find_by_email(&admin.email).await.unwrap(),
        Some(admin.clone())
    );
    stores
        .team
        .remove(&merchant.id, &admin.id, at(20))
        .await
        .unwrap();
    assert_eq!(stores.team.find_by_email(&admin.email).await.unwrap(), None);
    assert_eq!(
        stores
            .team
            .find_by_email(&unique_email("nobody"))
            .await
            .unwrap(),
        None
    );
}

pub async fn the_team_is_everyone_not_removed_oldest_first(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, at(0)).await;
    let (other, _) = stored_merchant(&stores, MerchantStatus::Onboarding, at(0)).await;
    let developer = member(
        &merchant.id,
        Role::Developer,
        UserStatus::Invited,
        at(3_000),
    );
    let viewer = member(&merchant.id, Role::Viewer, UserStatus::Active, at(1_000));
    let leaver = member(&merchant.id, Role::Admin, UserStatus::Active, at(2_000));
    let stranger = member(&other.id, Role::Admin, UserStatus::Active, at(500));
    for m in [&developer, &viewer, &leaver, &stranger] {
        stores.team.add(m).await.unwrap();
    }
    stores
        .team
        .remove(&merchant.id, &leaver.id, at(4_000))
        .await
        .unwrap();
    assert_eq!(
        stores.team.list(&merchant.id).await.unwrap(),
        vec![owner, viewer, developer]
    );
}

pub async fn activation_sets_the_password_of_an_invited_member(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let invited = member(&merchant.id, Role::Developer, UserStatus::Invited, at(10));
    stores.team.add(&invited).await.unwrap();

    stores
        .team
        .activate(&invited.id, "$argon2id$new", at(20))
        .await
        .unwrap();
    let active = stores.team.find(&invited.id).await.unwrap().unwrap();
    assert_eq!(active.status, UserStatus::Active);
    assert_eq!(active.password_hash.as_deref(), Some("$argon2id$new"));

    for not_invited in [&invited.id, &owner.id] {
        let again = stores
            .team
            .activate(not_invited, "$argon2id$other", at(30))
            .await;
        assert!(is_conflict(&again, conflicts::NOT_INVITED), "{again:?}");
    }
    assert_eq!(
        stores
            .team
            .find(&invited.id)
            .await
            .unwrap()
            .unwrap()
            .password_hash
            .as_deref(),
        Some("$argon2id$new")
    );
    let unknown = stores
        .team
        .activate(&ids().next::<MerchantUserId>(), "$argon2id$x", at(40))
        .await;
    assert!(
        matches!(unknown, Err(RepositoryError::NotFound))
            || is_conflict(&unknown, conflicts::NOT_INVITED),
        "{unknown:?}"
    );
}

pub async fn removal_marks_members_removed_but_keeps_the_last_owner(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let admin = member(&merchant.id, Role::Admin, UserStatus::Active, at(10));
    stores.team.add(&admin).await.unwrap();

    stores
        .team
        .remove(&merchant.id, &admin.id, at(20))
        .await
        .unwrap();
    assert_eq!(
        stores.team.find(&admin.id).await.unwrap().unwrap().status,
        UserStatus::Removed
    );

    let last = stores.team.remove(&merchant.id, &owner.id, at(30)).await;
    assert!(is_conflict(&last, conflicts::LAST_OWNER), "{last:?}");
    assert_eq!(
        stores.team.find(&owner.id).await.unwrap(),
        Some(owner.clone())
    );

    let second_owner = member(&merchant.id, Role::Owner, UserStatus::Active, at(40));
    stores.team.add(&second_owner).await.unwrap();
    stores
        .team
        .remove(&merchant.id, &owner.id, at(50))
        .await
        .unwrap();
    let last = stores
        .team
        .remove(&merchant.id, &second_owner.id, at(60))
        .await;
    assert!(is_conflict(&last, conflicts::LAST_OWNER), "{last:?}");
    assert_eq!(
        stores.team.list(&merchant.id).await.unwrap(),
        vec![second_owner]
    );
}

pub async fn removing_a_member_of_another_merchant_is_not_found(stores: MerchantStores) {
    let (mine, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let (theirs, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let their_admin = member(&theirs.id, Role::Admin, UserStatus::Active, at(10));
    stores.team.add(&their_admin).await.unwrap();

    let removed = stores.team.remove(&mine.id, &their_admin.id, at(20)).await;
    assert!(
        matches!(removed, Err(RepositoryError::NotFound)),
        "{removed:?}"
    );
    assert_eq!(
        stores.team.find(&their_admin.id).await.unwrap(),
        Some(their_admin)
    );
    let unknown = stores
        .team
        .remove(&mine.id, &ids().next::<MerchantUserId>(), at(30))
        .await;
    assert!(
        matches!(unknown, Err(RepositoryError::NotFound)),
        "{unknown:?}"
    );
}

pub async fn concurrent_removals_never_remove_the_last_owner(stores: MerchantStores) {
    for round in 0..4 {
        let (merchant, first) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
        let mut owners = vec![first];
        for i in 0..2 {
            let owner = member(&merchant.id, Role::Owner, UserStatus::Active, at(i + 1));
            stores.team.add(&owner).await.unwrap();
            owners.push(owner);
        }
        let removals = owners.iter().map(|owner| {
            let team = stores.team.clone();
            let merchant = merchant.id.clone();
            let owner = owner.id.clone();
            async move { team.remove(&merchant, &owner, at(100)).await }
        });
        let results = join_all(removals).await;
        let removed = results.iter().filter(|r| r.is_ok()).count();
        let refused = results
            .iter()
            .filter(|r| is_conflict(r, conflicts::LAST_OWNER))
            .count();
        assert_eq!((removed, refused), (2, 1), "round {round}: {results:?}");
        let remaining = stores.team.list(&merchant.id).await.unwrap();
        assert_eq!(remaining.len(), 1, "round {round}");
        assert_eq!(
            (remaining[0].role, remaining[0].status),
            (Role::Owner, UserStatus::Active)
        );
    }
}

const LOGIN_POLICY: LoginPolicy = LoginPolicy {
    max_attempts: 3,
    lockout: std::time::Duration::from_secs(900),
};

async fn take_login(stores: &MerchantStores, id: &MerchantUserId, now: Timestamp) -> bool {
    match stores
        .team
        .take_login_attempt(id, LOGIN_POLICY, now)
        .await
        .unwrap()
    {
        LoginAdmission::Admitted { .. } => true,
        LoginAdmission::Refused { until } => {
            assert!(until > now, "refused until {until:?} at {now:?}");
            false
        }
    }
}

pub async fn login_attempts_are_taken_locked_and_cleared(stores: MerchantStores) {
    let (_, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    for taken in 1..=3 {
        assert!(take_login(&stores, &owner.id, at(taken)).await);
    }
    let locked = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!(
        (locked.failed_logins, locked.locked_until),
        (3, Some(at(3 + 900_000)))
    );
    // Refused while locked, and the refusal changes nothing.
    assert!(!take_login(&stores, &owner.id, at(10)).await);
    let still = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!(
        (still.failed_logins, still.locked_until),
        (3, locked.locked_until)
    );
    // After the lock-out a fresh count starts.
    assert!(take_login(&stores, &owner.id, at(3 + 900_000)).await);
    let fresh = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!((fresh.failed_logins, fresh.locked_until), (1, None));

    stores.team.clear_failed_logins(&owner.id).await.unwrap();
    let cleared = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!((cleared.failed_logins, cleared.locked_until), (0, None));
}

pub async fn concurrent_login_attempts_get_no_more_tries_than_sequential_ones(
    stores: MerchantStores,
) {
    let (_, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let attempts = (0..20).map(|_| {
        let stores = stores.clone();
        let id = owner.id.clone();
        async move { take_login(&stores, &id, at(1)).await }
    });
    let admitted = join_all(attempts).await;
    assert_eq!(
        admitted.iter().filter(|admitted| **admitted).count(),
        LOGIN_POLICY.max_attempts as usize,
        "{admitted:?}"
    );
}

pub async fn a_login_attempt_for_an_unknown_member_is_not_found(stores: MerchantStores) {
    let unknown = ids().next::<MerchantUserId>();
    let result = stores
        .team
        .take_login_attempt(&unknown, LOGIN_POLICY, T0)
        .await;
    assert!(
        matches!(result, Err(RepositoryError::NotFound)),
        "{result:?}"
    );
}
