//! Registration and sign-in.

use super::*;

#[tokio::test]
async fn registration_signs_the_owner_in_and_sends_the_email_link_and_the_sms_code() {
    let h = harness();
    let (registered, actor) = h.register("ada@acme.example", "+2348012345678").await;

    assert_eq!(actor.user.id, registered.owner.id);
    assert_eq!(
        (actor.user.role, actor.user.status),
        (Role::Owner, UserStatus::Active)
    );
    let merchant = &registered.merchant;
    assert_eq!(merchant.status, MerchantStatus::Onboarding);
    assert_eq!(merchant.profile.registry_status, RegistryStatus::Verified);
    assert_eq!(
        (merchant.email_verified_at, merchant.phone_verified_at),
        (None, None)
    );
    let links = h.mail("ada@acme.example", "Confirm your email").await;
    assert_eq!(links.len(), 1);
    assert!(
        links[0]
            .link
            .as_deref()
            .unwrap()
            .starts_with("https://dashboard.example/verify-email?token=")
    );
    let code = h.last_phone_code("+2348012345678").await;
    assert!(
        code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()),
        "{code}"
    );
}

#[tokio::test]
async fn an_email_already_on_any_team_cannot_register_again() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    h.service
        .invite_member(&owner, "dev@acme.example", "Dev", "developer")
        .await
        .unwrap();

    // The owner's email (the domain's case does not matter) and an invited member's email.
    for taken in ["ada@ACME.example", "dev@acme.example"] {
        let again = h
            .service
            .register(register_request(taken, "+2348099999999"))
            .await;
        assert!(
            matches!(again, Err(MerchantError::EmailTaken)),
            "{taken}: {again:?}"
        );
    }
    let merchants = h
        .service
        .list_merchants(None, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(merchants.total, 1);
}

/// Both pass the early email check (the password hash takes a while in between); the store's
/// uniqueness decides, and the loser is told the email is taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_concurrent_registrations_with_one_email_exactly_one_succeeds() {
    let h = harness();
    let registrations: Vec<_> = ["+2348011111111", "+2348022222222"]
        .into_iter()
        .map(|phone| {
            let service = h.service.clone();
            tokio::spawn(async move {
                service
                    .register(register_request("ada@acme.example", phone))
                    .await
            })
        })
        .collect();
    let mut results = Vec::new();
    for registration in registrations {
        results.push(registration.await.unwrap());
    }

    let succeeded = results.iter().filter(|r| r.is_ok()).count();
    let taken = results
        .iter()
        .filter(|r| matches!(r, Err(MerchantError::EmailTaken)))
        .count();
    assert_eq!((succeeded, taken), (1, 1), "{results:?}");
    let merchants = h
        .service
        .list_merchants(None, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(merchants.total, 1);
}

#[tokio::test]
async fn a_wrong_password_and_an_unknown_email_are_the_same_refusal() {
    let h = harness();
    let (registered, _) = h.register("ada@acme.example", "+2348012345678").await;

    let wrong = h
        .service
        .login("ada@acme.example", "not the password")
        .await;
    assert!(
        matches!(wrong, Err(MerchantError::InvalidCredentials)),
        "{wrong:?}"
    );
    let unknown = h.service.login("eve@acme.example", PASSWORD).await;
    assert!(
        matches!(unknown, Err(MerchantError::InvalidCredentials)),
        "{unknown:?}"
    );
    let malformed = h.service.login("not an email", PASSWORD).await;
    assert!(
        matches!(malformed, Err(MerchantError::InvalidCredentials)),
        "{malformed:?}"
    );

    let session = h.service.login("ada@acme.example", PASSWORD).await.unwrap();
    let actor = h.service.authenticate(&session.token).await.unwrap();
    assert_eq!(actor.user.id, registered.owner.id);
    // The success cleared the failure counted before it.
    let owner = h.stored_member(&registered.owner.id).await;
    assert_eq!((owner.failed_logins, owner.locked_until), (0, None));
}

#[tokio::test]
async fn repeated_failures_lock_the_member_out_even_with_the_right_password_until_it_ends() {
    let h = harness();
    h.register("ada@acme.example", "+2348012345678").await;
    let settings = h.service.settings().clone();

    for _ in 0..settings.max_failed_logins {
        let wrong = h
            .service
            .login("ada@acme.example", "not the password")
            .await;
        assert!(
            matches!(wrong, Err(MerchantError::InvalidCredentials)),
            "{wrong:?}"
        );
    }
    let locked = h.service.login("ada@acme.example", PASSWORD).await;
    assert!(
        matches!(locked, Err(MerchantError::LockedOut { retry_after_secs }) if retry_after_secs == settings.lockout.as_secs()),
        "{locked:?}"
    );

    h.advance(settings.lockout - Duration::from_secs(1));
    let still = h.service.login("ada@acme.example", PASSWORD).await;
    assert!(
        matches!(
            still,
            Err(MerchantError::LockedOut {
                retry_after_secs: 1
            })
        ),
        "{still:?}"
    );
    h.advance(Duration::from_secs(1));
    let session = h.service.login("ada@acme.example", PASSWORD).await.unwrap();
    h.service.authenticate(&session.token).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_wrong_passwords_get_no_more_tries_than_sequential_ones() {
    let h = harness();
    h.register("ada@acme.example", "+2348012345678").await;
    let max = h.service.settings().max_failed_logins as usize;

    let attempts: Vec<_> = (0..max + 8)
        .map(|_| {
            let service = h.service.clone();
            tokio::spawn(async move { service.login("ada@acme.example", "a wrong guess").await })
        })
        .collect();
    let mut results = Vec::new();
    for attempt in attempts {
        results.push(attempt.await.unwrap());
    }

    assert_eq!(login_outcomes(&results), (max, 8));
    let locked = h.service.login("ada@acme.example", PASSWORD).await;
    assert!(
        matches!(locked, Err(MerchantError::LockedOut { .. })),
        "{locked:?}"
    );
}
