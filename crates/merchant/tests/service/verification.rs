//! Email and phone verification.

use super::*;

#[tokio::test]
async fn the_sms_code_allows_a_limited_number_of_wrong_guesses_then_not_even_the_right_one() {
    let h = harness();
    let (registered, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let code = h.last_phone_code("+2348012345678").await;
    let wrong = if code == "000000" { "111111" } else { "000000" };

    for _ in 0..h.service.settings().code_attempts {
        let guess = h.service.verify_phone(&owner, wrong).await;
        assert!(
            matches!(guess, Err(MerchantError::InvalidCode)),
            "{guess:?}"
        );
    }
    let right_too_late = h.service.verify_phone(&owner, &code).await;
    assert!(
        matches!(right_too_late, Err(MerchantError::InvalidCode)),
        "{right_too_late:?}"
    );
    let merchant = h
        .service
        .merchant(registered.merchant.id.as_str())
        .await
        .unwrap();
    assert_eq!(merchant.phone_verified_at, None);

    // A resend (after the interval) brings a fresh code with fresh attempts.
    h.advance(h.service.settings().resend_interval);
    h.service.resend_phone_code(&owner).await.unwrap();
    let fresh = h.last_phone_code("+2348012345678").await;
    let verified = h.service.verify_phone(&owner, &fresh).await.unwrap();
    assert_eq!(verified.phone_verified_at, Some(h.now()));
    let again = h.service.verify_phone(&owner, &fresh).await;
    assert!(
        matches!(again, Err(MerchantError::Conflict(_))),
        "{again:?}"
    );
}

#[tokio::test]
async fn resends_wait_for_the_interval_and_an_expired_code_is_refused() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let settings = h.service.settings().clone();

    h.advance(Duration::from_secs(20));
    let soon = h.service.resend_phone_code(&owner).await;
    let expected = settings.resend_interval.as_secs() - 20;
    assert!(
        matches!(soon, Err(MerchantError::TooSoon { retry_after_secs }) if retry_after_secs == expected),
        "{soon:?}"
    );
    assert_eq!(
        h.mail("+2348012345678", "idconsent verification code")
            .await
            .len(),
        1
    );

    let code = h.last_phone_code("+2348012345678").await;
    h.advance(settings.phone_code_ttl);
    let expired = h.service.verify_phone(&owner, &code).await;
    assert!(
        matches!(expired, Err(MerchantError::InvalidCode)),
        "{expired:?}"
    );

    h.service.resend_phone_code(&owner).await.unwrap();
    let fresh = h.last_phone_code("+2348012345678").await;
    h.service.verify_phone(&owner, &fresh).await.unwrap();
}

#[tokio::test]
async fn the_email_link_works_once_and_not_after_it_expires() {
    let h = harness();
    let (first, _) = h.register("ada@acme.example", "+2348012345678").await;
    let (second, _) = h.register("bo@shop.example", "+2348022222222").await;
    let first_token = h
        .last_link_token("ada@acme.example", "Confirm your email")
        .await;
    let second_token = h
        .last_link_token("bo@shop.example", "Confirm your email")
        .await;

    let verified = h.service.verify_email_link(&first_token).await.unwrap();
    assert_eq!(verified.id, first.merchant.id);
    assert_eq!(verified.email_verified_at, Some(h.now()));
    let reused = h.service.verify_email_link(&first_token).await;
    assert!(
        matches!(reused, Err(MerchantError::InvalidLink)),
        "{reused:?}"
    );

    h.advance(h.service.settings().email_link_ttl);
    let expired = h.service.verify_email_link(&second_token).await;
    assert!(
        matches!(expired, Err(MerchantError::InvalidLink)),
        "{expired:?}"
    );
    let merchant = h
        .service
        .merchant(second.merchant.id.as_str())
        .await
        .unwrap();
    assert_eq!(merchant.email_verified_at, None);
}
