//! Enrollments, users and the passkey registration that completes them.

use super::*;

pub async fn an_enrollment_comes_back_as_stored(stores: Stores) {
    let enrollment = enrollment(&phone(), Some(audience()));
    stores.enrollments.insert(&enrollment).await.unwrap();
    let found = stores.enrollments.find(&enrollment.id).await.unwrap();
    assert_eq!(found, Some(enrollment));
    let unknown: EnrollmentId = ids().next();
    assert_eq!(stores.enrollments.find(&unknown).await.unwrap(), None);
}

pub async fn enrollments_of_a_phone_are_limited_even_concurrently(stores: Stores) {
    let phone = phone();
    let window = Duration::from_secs(3600);
    // Two older ones: one inside the window, one before it.
    for offset in [-4_000_000, -1_000_000] {
        let mut e = enrollment(&phone, None);
        e.created_at = at(offset);
        stores.enrollments.insert(&e).await.unwrap();
    }
    let outcomes = join_all((0..8).map(|_| {
        let stores = stores.clone();
        let mut e = enrollment(&phone, None);
        e.created_at = at(0);
        async move {
            stores
                .enrollments
                .insert_within(&e, 5, window)
                .await
                .unwrap()
        }
    }))
    .await;
    let inserted = outcomes
        .iter()
        .filter(|o| **o == Admitted::Inserted)
        .count();
    assert_eq!(inserted, 4, "{outcomes:?}");
    // Refused until the oldest inside the window leaves it.
    assert!(outcomes.contains(&Admitted::Refused {
        retry_at: at(-1_000_000).plus(window)
    }));
    // Another phone is not affected.
    assert_eq!(
        stores
            .enrollments
            .insert_within(&enrollment(&self::phone(), None), 5, window)
            .await
            .unwrap(),
        Admitted::Inserted
    );
}

pub async fn attempts_are_taken_atomically_and_a_failure_is_final(stores: Stores) {
    let enrollment = enrollment(&phone(), None);
    stores.enrollments.insert(&enrollment).await.unwrap();
    let taken = join_all((0..20).map(|_| {
        let (stores, id) = (stores.clone(), enrollment.id.clone());
        async move {
            stores
                .enrollments
                .take_otp_attempt(&id, at(10))
                .await
                .unwrap()
        }
    }))
    .await;
    let mut left: Vec<u32> = taken
        .iter()
        .flatten()
        .map(|e| e.otp_attempts_left)
        .collect();
    left.sort_unstable();
    assert_eq!(left, [0, 1, 2, 3, 4], "as many as there were attempts");
    let exhausted = stores
        .enrollments
        .find(&enrollment.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(exhausted.status, EnrollmentStatus::PendingOtp);
    assert!(
        stores
            .enrollments
            .fail(&enrollment.id, at(20))
            .await
            .unwrap()
    );
    assert!(
        !stores
            .enrollments
            .fail(&enrollment.id, at(30))
            .await
            .unwrap()
    );
    let failed = stores
        .enrollments
        .find(&enrollment.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(failed.status, EnrollmentStatus::Failed);
    assert!(
        stores
            .enrollments
            .take_otp_attempt(&enrollment.id, at(40))
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn one_user_per_phone_even_when_enrolling_concurrently(stores: Stores) {
    let phone = phone();
    let racers = (0..6).map(|_| {
        let stores = stores.clone();
        let candidate = user(&phone);
        async move { stores.enrollments.ensure_user(&candidate).await.unwrap() }
    });
    let users = join_all(racers).await;
    assert!(
        users
            .iter()
            .all(|u| u.id == users[0].id && u.phone == phone)
    );
    let by_phone = stores.enrollments.user_by_phone(&phone).await.unwrap();
    assert_eq!(by_phone.as_ref(), Some(&users[0]));
    assert_eq!(
        stores.enrollments.user(&users[0].id).await.unwrap(),
        by_phone
    );
}

pub async fn registering_a_device_moves_the_enrollment_once(stores: Stores) {
    let audience = audience();
    let (enrollment, user, device) = registered(&stores, Some(audience.clone())).await;
    let stored = stores
        .enrollments
        .find(&enrollment.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, EnrollmentStatus::PasskeyRegistered);
    assert_eq!(stored.device_id, Some(device.id.clone()));
    assert_eq!(
        stores.devices.find(&device.id).await.unwrap(),
        Some(device.clone())
    );
    assert_eq!(
        stores
            .devices
            .by_credential(&device.credential_id)
            .await
            .unwrap(),
        Some(device.clone())
    );
    // A second device for the same enrollment is refused and nothing is written.
    let second = self::device(&user, None);
    let refused = stores
        .devices
        .register(
            &second,
            &enrollment.id,
            at(2),
            &[event(&audience, DEVICE_REGISTERED, "second")],
            1,
        )
        .await;
    assert!(matches!(refused, Err(StoreError::NotFound)), "{refused:?}");
    assert_eq!(stores.devices.find(&second.id).await.unwrap(), None);
    assert!(events_for(&stores, &audience).await.is_empty());
    assert_eq!(
        stores.devices.of_user(&user.id).await.unwrap(),
        vec![device]
    );
}

pub async fn a_credential_is_registered_once(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let other = enrollment(&user.phone, None);
    stores.enrollments.insert(&other).await.unwrap();
    let copy = Device {
        credential_id: device.credential_id.clone(),
        ..self::device(&user, None)
    };
    let refused = stores
        .devices
        .register(&copy, &other.id, at(5), &[], 1)
        .await;
    assert!(matches!(refused, Err(StoreError::Duplicate)), "{refused:?}");
    let other = stores.enrollments.find(&other.id).await.unwrap().unwrap();
    assert_eq!(other.status, EnrollmentStatus::PendingOtp, "rolled back");
}

pub async fn completing_marks_the_user_enrolled_with_its_events(stores: Stores) {
    let audience = audience();
    let (enrollment, user, _) = registered(&stores, Some(audience.clone())).await;
    assert_eq!(user.enrolled_at, None);
    let outbox = [
        event(&audience, ENROLLMENT_COMPLETED, "done"),
        event(&audience, AUTH_SUCCESS, "done"),
    ];
    assert!(
        stores
            .enrollments
            .complete(&enrollment.id, &user.id, at(50), &outbox)
            .await
            .unwrap()
    );
    assert!(
        !stores
            .enrollments
            .complete(&enrollment.id, &user.id, at(60), &outbox)
            .await
            .unwrap(),
        "only once"
    );
    let user = stores.enrollments.user(&user.id).await.unwrap().unwrap();
    assert_eq!(user.enrolled_at, Some(at(50)));
    assert_eq!(
        events_for(&stores, &audience).await,
        vec![AUTH_SUCCESS, ENROLLMENT_COMPLETED]
    );
}
