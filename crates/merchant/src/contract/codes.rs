//! [`CodeRepository`](crate::ports::CodeRepository): one-time codes and link tokens.

use futures_util::future::join_all;
use idconsent_kernel::id::{MerchantId, MerchantUserId};

use crate::ports::{CodePurpose, OneTimeCode};

use super::MerchantStores;
use super::fixtures::*;

pub async fn put_replaces_the_code_of_the_same_purpose_and_subject(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let first = code(CodePurpose::EmailVerification, &subject, 1);
    stores.codes.put(&first).await.unwrap();
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &first.code_hash)
            .await
            .unwrap(),
        Some(first.clone())
    );

    let second = OneTimeCode {
        expires_at: at(1_200_000),
        attempts_left: 5,
        created_at: at(60_000),
        ..code(CodePurpose::EmailVerification, &subject, 5)
    };
    stores.codes.put(&second).await.unwrap();
    let phone = code(CodePurpose::PhoneVerification, &subject, 5);
    stores.codes.put(&phone).await.unwrap();

    assert_eq!(
        stores
            .codes
            .find(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &first.code_hash)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &second.code_hash)
            .await
            .unwrap(),
        Some(second.clone())
    );
    // Purposes are separate: the phone code did not replace the email link, and a hash is
    // looked up within its purpose.
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::PhoneVerification, &subject)
            .await
            .unwrap(),
        Some(phone)
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::Invitation, &second.code_hash)
            .await
            .unwrap(),
        None
    );
}

pub async fn codes_are_found_whatever_their_expiry(stores: MerchantStores) {
    let subject = ids().next::<MerchantUserId>().into_string();
    let expired = OneTimeCode {
        expires_at: at(-86_400_000),
        created_at: at(-90_000_000),
        ..code(CodePurpose::Invitation, &subject, 1)
    };
    stores.codes.put(&expired).await.unwrap();
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::Invitation, &subject)
            .await
            .unwrap(),
        Some(expired.clone())
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::Invitation, &expired.code_hash)
            .await
            .unwrap(),
        Some(expired)
    );
}

async fn attempts_left(stores: &MerchantStores, subject: &str) -> u32 {
    stores
        .codes
        .find(CodePurpose::PhoneVerification, subject)
        .await
        .unwrap()
        .map_or(0, |code| code.attempts_left)
}

pub async fn taking_attempts_counts_down_to_zero_and_not_below(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let stored = code(CodePurpose::PhoneVerification, &subject, 2);
    stores.codes.put(&stored).await.unwrap();
    for expected in [Some(1), Some(0), None] {
        let taken = stores
            .codes
            .take_attempt(CodePurpose::PhoneVerification, &subject, T0)
            .await
            .unwrap();
        assert_eq!(taken.as_ref().map(|code| code.attempts_left), expected);
        if let Some(taken) = taken {
            assert_eq!(taken.code_hash, stored.code_hash);
        }
    }
    assert_eq!(attempts_left(&stores, &subject).await, 0);
    // No code, and an expired code, give no attempt.
    let missing = stores
        .codes
        .take_attempt(CodePurpose::EmailVerification, &subject, T0)
        .await
        .unwrap();
    assert_eq!(missing, None);
    let other = ids().next::<MerchantId>().into_string();
    stores
        .codes
        .put(&code(CodePurpose::PhoneVerification, &other, 5))
        .await
        .unwrap();
    let expired = stores
        .codes
        .take_attempt(CodePurpose::PhoneVerification, &other, at(600_000))
        .await
        .unwrap();
    assert_eq!(expired, None);
    assert_eq!(attempts_left(&stores, &other).await, 5);
}

pub async fn concurrent_attempts_take_no_more_than_are_left(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    stores
        .codes
        .put(&code(CodePurpose::PhoneVerification, &subject, 5))
        .await
        .unwrap();
    let takers = (0..20).map(|_| {
        let codes = stores.codes.clone();
        let subject = subject.clone();
        async move {
            codes
                .take_attempt(CodePurpose::PhoneVerification, &subject, T0)
                .await
                .unwrap()
                .is_some()
        }
    });
    let taken = join_all(takers).await;
    assert_eq!(taken.iter().filter(|taken| **taken).count(), 5, "{taken:?}");
    assert_eq!(attempts_left(&stores, &subject).await, 0);
}

pub async fn a_replacement_waits_for_the_cutoff(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let first = code(CodePurpose::PhoneVerification, &subject, 5);
    // No code yet: stored whatever the cutoff.
    assert!(
        stores
            .codes
            .put_unless_newer(&first, at(-1_000_000))
            .await
            .unwrap()
    );
    let second = OneTimeCode {
        created_at: at(30_000),
        ..code(CodePurpose::PhoneVerification, &subject, 5)
    };
    // The first code (created at T0) is newer than the cutoff: refused, nothing changes.
    assert!(
        !stores
            .codes
            .put_unless_newer(&second, at(-1))
            .await
            .unwrap()
    );
    let current = stores.codes.find(CodePurpose::PhoneVerification, &subject);
    assert_eq!(current.await.unwrap(), Some(first));
    // At the cutoff it is old enough.
    assert!(stores.codes.put_unless_newer(&second, T0).await.unwrap());
    let current = stores.codes.find(CodePurpose::PhoneVerification, &subject);
    assert_eq!(current.await.unwrap(), Some(second));
}

pub async fn of_concurrent_replacements_exactly_one_stores(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    stores
        .codes
        .put(&code(CodePurpose::PhoneVerification, &subject, 5))
        .await
        .unwrap();
    // Twenty resends a minute later, each allowed to replace a code from T0 or before.
    let resends = (0..20).map(|_| {
        let codes = stores.codes.clone();
        let replacement = OneTimeCode {
            created_at: at(60_000),
            ..code(CodePurpose::PhoneVerification, &subject, 5)
        };
        async move { codes.put_unless_newer(&replacement, T0).await.unwrap() }
    });
    let stored = join_all(resends).await;
    assert_eq!(
        stored.iter().filter(|stored| **stored).count(),
        1,
        "{stored:?}"
    );
}

pub async fn consuming_deletes_the_code_once(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let code = code(CodePurpose::EmailVerification, &subject, 1);
    stores.codes.put(&code).await.unwrap();
    assert!(
        stores
            .codes
            .consume(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap()
    );
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &code.code_hash)
            .await
            .unwrap(),
        None
    );
    assert!(
        !stores
            .codes
            .consume(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap()
    );
}

pub async fn of_concurrent_consumers_exactly_one_wins(stores: MerchantStores) {
    for round in 0..3 {
        let subject = ids().next::<MerchantId>().into_string();
        stores
            .codes
            .put(&code(CodePurpose::PhoneVerification, &subject, 5))
            .await
            .unwrap();
        let consumers = (0..6).map(|_| {
            let codes = stores.codes.clone();
            let subject = subject.clone();
            async move {
                codes
                    .consume(CodePurpose::PhoneVerification, &subject)
                    .await
                    .unwrap()
            }
        });
        let won = join_all(consumers).await;
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: {won:?}"
        );
    }
}
