//! Team.

use super::*;

#[tokio::test]
async fn an_invitation_is_accepted_once_and_gives_the_invited_role() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    h.service
        .invite_member(&owner, "dev@acme.example", "Dev", "developer")
        .await
        .unwrap();
    let token = h
        .last_link_token("dev@acme.example", "You are invited")
        .await;

    let short = h.service.accept_invitation(&token, "short").await;
    assert!(matches!(short, Err(MerchantError::Invalid(_))), "{short:?}");
    let session = h.service.accept_invitation(&token, PASSWORD).await.unwrap();
    let developer = h.service.authenticate(&session.token).await.unwrap();
    assert_eq!(
        (developer.user.role, developer.user.merchant_id.clone()),
        (Role::Developer, owner.user.merchant_id.clone())
    );
    let again = h
        .service
        .accept_invitation(&token, "another long password")
        .await;
    assert!(
        matches!(again, Err(MerchantError::InvalidLink)),
        "{again:?}"
    );
    h.service.login("dev@acme.example", PASSWORD).await.unwrap();
    let other = h
        .service
        .login("dev@acme.example", "another long password")
        .await;
    assert!(
        matches!(other, Err(MerchantError::InvalidCredentials)),
        "{other:?}"
    );
}

#[tokio::test]
async fn an_expired_invitation_cannot_be_accepted_and_the_member_cannot_sign_in() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let invited = h
        .service
        .invite_member(&owner, "dev@acme.example", "Dev", "developer")
        .await
        .unwrap();
    let token = h
        .last_link_token("dev@acme.example", "You are invited")
        .await;

    h.advance(h.service.settings().invitation_ttl);
    let late = h.service.accept_invitation(&token, PASSWORD).await;
    assert!(matches!(late, Err(MerchantError::InvalidLink)), "{late:?}");
    let member = h.stored_member(&invited.id).await;
    assert_eq!(
        (member.status, member.password_hash),
        (UserStatus::Invited, None)
    );
    let login = h.service.login("dev@acme.example", PASSWORD).await;
    assert!(
        matches!(login, Err(MerchantError::InvalidCredentials)),
        "{login:?}"
    );
}

#[tokio::test]
async fn roles_limit_what_members_may_do() {
    let h = harness();
    let (registered, owner) = h.register("ada@acme.example", "+2348012345678").await;
    // Apart in time, so the team's oldest-first order is theirs.
    h.advance(Duration::from_millis(1));
    let (_, admin) = h.invite(&owner, "admin@acme.example", "admin").await;
    h.advance(Duration::from_millis(1));
    let (_, developer) = h.invite(&owner, "dev@acme.example", "developer").await;
    h.advance(Duration::from_millis(1));
    let (_, viewer) = h.invite(&admin, "view@acme.example", "viewer").await;

    let forbidden = |result: Result<_, MerchantError>| {
        assert!(
            matches!(result, Err(MerchantError::Forbidden(_))),
            "{result:?}"
        );
    };
    forbidden(
        h.service
            .invite_member(&developer, "x@acme.example", "X", "viewer")
            .await
            .map(drop),
    );
    forbidden(
        h.service
            .create_application(
                &viewer,
                ApplicationInput {
                    name: Some("Viewer's app".into()),
                    callback_url: Some("https://shop.example/cb".into()),
                    ..ApplicationInput::default()
                },
            )
            .await
            .map(drop),
    );
    let app = h.create_application(&developer, "Checkout").await;
    let id = app.view.application.id.as_str();
    forbidden(h.service.rotate_secret(&developer, id).await.map(drop));
    forbidden(
        h.service
            .remove_member(&admin, registered.owner.id.as_str())
            .await
            .map(drop),
    );
    let invite_owner = h
        .service
        .invite_member(&owner, "co@acme.example", "Co", "owner")
        .await;
    assert!(
        matches!(invite_owner, Err(MerchantError::Invalid(_))),
        "{invite_owner:?}"
    );
    // What they may do, they can.
    h.service
        .rotate_key(&developer, id, "sandbox")
        .await
        .unwrap();
    h.service.rotate_secret(&admin, id).await.unwrap();
    let team = h.service.team(&viewer).await.unwrap();
    assert_eq!(
        team.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::Owner, Role::Admin, Role::Developer, Role::Viewer]
    );
}

#[tokio::test]
async fn a_removed_member_loses_access_and_the_last_owner_stays() {
    let h = harness();
    let (registered, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let (admin_id, _) = h.invite(&owner, "admin@acme.example", "admin").await;
    let admin_session = h
        .service
        .login("admin@acme.example", PASSWORD)
        .await
        .unwrap();

    let last = h
        .service
        .remove_member(&owner, registered.owner.id.as_str())
        .await;
    assert!(matches!(last, Err(MerchantError::Conflict(_))), "{last:?}");
    let removed = h
        .service
        .remove_member(&owner, admin_id.as_str())
        .await
        .unwrap();
    assert_eq!(removed.status, UserStatus::Removed);

    let stale = h.service.authenticate(&admin_session.token).await;
    assert!(
        matches!(stale, Err(MerchantError::InvalidSession)),
        "{stale:?}"
    );
    let login = h.service.login("admin@acme.example", PASSWORD).await;
    assert!(
        matches!(login, Err(MerchantError::InvalidCredentials)),
        "{login:?}"
    );
    let again = h.service.remove_member(&owner, admin_id.as_str()).await;
    assert!(
        matches!(again, Err(MerchantError::NotFound(_))),
        "{again:?}"
    );
    assert_eq!(h.service.team(&owner).await.unwrap().len(), 1);
}

#[tokio::test]
async fn another_merchants_member_cannot_touch_this_team_or_its_applications() {
    let h = harness();
    let (_, acme) = h.register("ada@acme.example", "+2348012345678").await;
    let (_, rival) = h.register("eve@rival.example", "+2348033333333").await;
    let (developer_id, _) = h.invite(&acme, "dev@acme.example", "developer").await;
    let app = h.create_application(&acme, "Checkout").await;
    let id = app.view.application.id.as_str();

    let not_found = |result: Result<_, MerchantError>| {
        assert!(
            matches!(result, Err(MerchantError::NotFound(_))),
            "{result:?}"
        );
    };
    not_found(
        h.service
            .remove_member(&rival, developer_id.as_str())
            .await
            .map(drop),
    );
    not_found(h.service.application(&rival, id).await.map(drop));
    not_found(h.service.rotate_key(&rival, id, "sandbox").await.map(drop));
    not_found(h.service.rotate_secret(&rival, id).await.map(drop));
    not_found(h.service.rotate_webhook_secret(&rival, id).await.map(drop));
    not_found(
        h.service
            .update_application(
                &rival,
                id,
                ApplicationInput {
                    name: Some("Hijacked".into()),
                    ..ApplicationInput::default()
                },
            )
            .await
            .map(drop),
    );
    let listed = h
        .service
        .list_applications(&rival, PageRequest::default())
        .await
        .unwrap();
    assert_eq!((listed.total, listed.items.len()), (0, 0));
    assert_eq!(
        h.service
            .team(&rival)
            .await
            .unwrap()
            .iter()
            .map(|m| &m.id)
            .collect::<Vec<_>>(),
        [&rival.user.id]
    );

    // Nothing of Acme's changed.
    assert_eq!(
        h.stored_application(&app.view.application.id).await,
        app.view.application
    );
    let developer = h.stored_member(&developer_id).await;
    assert_eq!(developer.status, UserStatus::Active);
}
