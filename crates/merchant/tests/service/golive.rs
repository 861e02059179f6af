//! Go-live.

use super::*;

#[tokio::test]
async fn live_keys_exist_only_after_the_review_approves_a_complete_account() {
    let h = harness();
    let (registered, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let merchant_id = registered.merchant.id.as_str().to_owned();
    let before = h.create_application(&owner, "Checkout").await;
    assert_eq!(before.view.live_api_key, None);

    let blocked = h.service.submit_for_review(&owner).await;
    let Err(MerchantError::GoLiveBlocked(unmet)) = blocked else {
        panic!("{blocked:?}");
    };
    assert_eq!(
        unmet,
        [
            Requirement::BusinessDescription,
            Requirement::UseCase,
            Requirement::BusinessAddress,
            Requirement::BusinessRegistrationDocument,
            Requirement::RepresentativeIdentity,
            Requirement::RepresentativeIdDocument,
            Requirement::EmailVerified,
            Requirement::PhoneVerified,
        ]
    );
    let early = h.service.approve_merchant(&merchant_id).await;
    assert!(
        matches!(early, Err(MerchantError::Conflict(_))),
        "{early:?}"
    );

    h.complete_onboarding(&owner, "ada@acme.example", "+2348012345678")
        .await;
    let submitted = h.service.submit_for_review(&owner).await.unwrap();
    assert_eq!(submitted.status, MerchantStatus::InReview);
    let frozen = h
        .service
        .update_business(&owner, BusinessPatch::default())
        .await;
    assert!(
        matches!(frozen, Err(MerchantError::Conflict(_))),
        "{frozen:?}"
    );
    // Still sandbox only while in review.
    let live = h
        .service
        .rotate_key(&owner, before.view.application.id.as_str(), "live")
        .await;
    assert!(matches!(live, Err(MerchantError::Conflict(_))), "{live:?}");

    h.advance(Duration::from_secs(60));
    let approved = h.service.approve_merchant(&merchant_id).await.unwrap();
    assert_eq!(approved.status, MerchantStatus::Live);
    assert_eq!(approved.decided_at, Some(h.now()));
    let view = h
        .service
        .application(&owner, before.view.application.id.as_str())
        .await
        .unwrap();
    let live_key = view.live_api_key.unwrap();
    assert!(live_key.as_str().starts_with("mk_live_"));
    let (found, environment) = h
        .store
        .find_by_key_hash(&h.key_hash(&live_key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.id, environment),
        (before.view.application.id.clone(), Environment::Live)
    );
    let account = h.service.account(&owner).await.unwrap();
    assert!(
        account
            .documents
            .iter()
            .all(|d| d.status == DocumentStatus::Verified)
    );
    assert_eq!(
        h.mail("ada@acme.example", "Your idconsent account is live")
            .await
            .len(),
        1
    );

    // Applications made after approval get their live key at once.
    let after = h.create_application(&owner, "Mobile").await;
    assert!(
        after
            .view
            .live_api_key
            .unwrap()
            .as_str()
            .starts_with("mk_live_")
    );
}

#[tokio::test]
async fn a_rejection_is_explained_and_the_account_can_be_submitted_again() {
    let h = harness();
    let (registered, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let merchant_id = registered.merchant.id.as_str().to_owned();
    h.complete_onboarding(&owner, "ada@acme.example", "+2348012345678")
        .await;
    h.service.submit_for_review(&owner).await.unwrap();

    let rejected = h
        .service
        .reject_merchant(&merchant_id, "The certificate is unreadable")
        .await
        .unwrap();
    assert_eq!(rejected.status, MerchantStatus::Rejected);
    assert_eq!(
        rejected.rejection_reason.as_deref(),
        Some("The certificate is unreadable")
    );
    let told = h
        .mail("ada@acme.example", "Your idconsent go-live review")
        .await;
    assert!(told[0].body.contains("The certificate is unreadable"));
    let approve = h.service.approve_merchant(&merchant_id).await;
    assert!(
        matches!(approve, Err(MerchantError::Conflict(_))),
        "{approve:?}"
    );

    let resubmitted = h.service.submit_for_review(&owner).await.unwrap();
    assert_eq!(resubmitted.status, MerchantStatus::InReview);
    let approved = h.service.approve_merchant(&merchant_id).await.unwrap();
    assert_eq!(
        (approved.status, approved.rejection_reason),
        (MerchantStatus::Live, None)
    );
}
