//! Devices: blocking, use records, stale registrations and recovery.

use super::*;

pub async fn blocking_a_device_revokes_its_refresh_tokens(stores: Stores) {
    let audience = audience();
    let (_, _, device) = registered(&stores, Some(audience.clone())).await;
    let token = refresh(&device);
    stores.refresh_tokens.insert(&token).await.unwrap();
    assert!(
        stores
            .devices
            .set_status(
                &device.id,
                &[DeviceStatus::Active],
                DeviceStatus::Blocked,
                at(10),
                &Effects::default()
            )
            .await
            .unwrap()
    );
    assert!(
        !stores
            .devices
            .set_status(
                &device.id,
                &[DeviceStatus::Active],
                DeviceStatus::Blocked,
                at(11),
                &Effects::default()
            )
            .await
            .unwrap(),
        "already blocked"
    );
    let rotated = stores
        .refresh_tokens
        .rotate(&token.hash, &next("install-1"), at(20))
        .await
        .unwrap();
    assert_eq!(rotated, Rotation::Invalid, "revoked with the device");
    assert!(
        stores
            .devices
            .set_status(
                &device.id,
                &[DeviceStatus::Active, DeviceStatus::Blocked],
                DeviceStatus::Deregistered,
                at(30),
                &Effects::events(vec![event(&audience, DEVICE_DEREGISTERED, "gone")])
            )
            .await
            .unwrap()
    );
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!(stored.status, DeviceStatus::Deregistered);
    assert_eq!(
        events_for(&stores, &audience).await,
        vec![DEVICE_DEREGISTERED]
    );
}

pub async fn record_use_updates_only_active_devices(stores: Stores) {
    let (_, _, device) = registered(&stores, None).await;
    assert_eq!(
        stores
            .devices
            .find(&device.id)
            .await
            .unwrap()
            .unwrap()
            .counter,
        3,
        "the registration counter is stored"
    );
    assert!(
        stores
            .devices
            .record_use(&device.id, 7, at(40))
            .await
            .unwrap()
    );
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!(stored.counter, 7);
    assert_eq!(stored.last_used_at, Some(at(40)));
    assert_eq!(
        stored.passkey, device.passkey,
        "the passkey is never rewritten"
    );
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
    assert!(
        !stores
            .devices
            .record_use(&device.id, 8, at(60))
            .await
            .unwrap()
    );
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (7, Some(at(40))));
}

pub async fn record_use_needs_the_counter_to_advance(stores: Stores) {
    let (_, _, device) = registered(&stores, None).await;
    // Stored 3: neither 3 again, nor less, nor 0.
    for stale in [3, 2, 0] {
        assert!(
            !stores
                .devices
                .record_use(&device.id, stale, at(10))
                .await
                .unwrap(),
            "{stale}"
        );
    }
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (3, None));
    assert!(
        stores
            .devices
            .record_use(&device.id, 4, at(11))
            .await
            .unwrap()
    );

    // A passkey whose counter stays 0 (synced passkeys) is used again and again.
    let (_, user, _) = registered(&stores, None).await;
    let other_enrollment = self::enrollment(&user.phone, None);
    stores.enrollments.insert(&other_enrollment).await.unwrap();
    let zero = Device {
        counter: 0,
        ..self::device(&user, None)
    };
    stores
        .devices
        .register(&zero, &other_enrollment.id, at(1), &[], 1)
        .await
        .unwrap();
    assert!(
        stores
            .devices
            .record_use(&zero.id, 0, at(20))
            .await
            .unwrap()
    );
    assert!(
        stores
            .devices
            .record_use(&zero.id, 0, at(21))
            .await
            .unwrap()
    );
    let stored = stores.devices.find(&zero.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (0, Some(at(21))));
}

pub async fn a_registration_judged_on_stale_devices_changes_nothing(stores: Stores) {
    let audience = audience();
    let (_, user, first) = registered(&stores, None).await;
    let later = enrollment(&user.phone, Some(audience.clone()));
    stores.enrollments.insert(&later).await.unwrap();
    let second = device(&user, None);
    // Judged as if the user had no device: refused, nothing written.
    let refused = stores
        .devices
        .register(
            &second,
            &later.id,
            at(2),
            &[event(&audience, DEVICE_REGISTERED, "stale")],
            0,
        )
        .await;
    assert!(matches!(refused, Err(StoreError::Changed)), "{refused:?}");
    assert_eq!(stores.devices.of_user(&user.id).await.unwrap(), vec![first]);
    let later = stores.enrollments.find(&later.id).await.unwrap().unwrap();
    assert_eq!(later.status, EnrollmentStatus::PendingOtp);
    assert!(events_for(&stores, &audience).await.is_empty());
}

pub async fn of_concurrent_first_registrations_of_a_user_one_succeeds(stores: Stores) {
    let phone = phone();
    let user = stores.enrollments.ensure_user(&user(&phone)).await.unwrap();
    let mut attempts = Vec::new();
    for _ in 0..6 {
        let enrollment = enrollment(&phone, None);
        stores.enrollments.insert(&enrollment).await.unwrap();
        attempts.push((enrollment, device(&user, None)));
    }
    let outcomes = join_all(attempts.iter().map(|(enrollment, device)| {
        let stores = stores.clone();
        async move {
            stores
                .devices
                .register(device, &enrollment.id, at(1), &[], 0)
                .await
        }
    }))
    .await;
    let registered = outcomes.iter().filter(|o| o.is_ok()).count();
    let changed = outcomes
        .iter()
        .filter(|o| matches!(o, Err(StoreError::Changed)))
        .count();
    assert_eq!((registered, changed), (1, 5), "{outcomes:?}");
    assert_eq!(stores.devices.of_user(&user.id).await.unwrap().len(), 1);
}

pub async fn a_recovery_starts_once_and_comes_due_on_time(stores: Stores) {
    let audience = audience();
    let (_, user, active) = registered(&stores, None).await;
    let later = enrollment(&user.phone, None);
    stores.enrollments.insert(&later).await.unwrap();
    let pending = Device {
        status: DeviceStatus::Pending,
        ..device(&user, None)
    };
    stores
        .devices
        .register(&pending, &later.id, at(2), &[], 1)
        .await
        .unwrap();
    let started = |device: &Device, marker: &'static str| {
        let (stores, id, audience) = (stores.clone(), device.id.clone(), audience.clone());
        async move {
            stores
                .devices
                .start_recovery(
                    &id,
                    at(1_000),
                    &[event(&audience, DEVICE_RECOVERY_STARTED, marker)],
                )
                .await
                .unwrap()
        }
    };
    assert!(
        !started(&active, "active").await,
        "only a pending device recovers"
    );
    assert!(started(&pending, "first").await);
    assert!(!started(&pending, "again").await, "once");
    assert_eq!(
        events_for(&stores, &audience).await,
        vec![DEVICE_RECOVERY_STARTED]
    );
    let stored = stores.devices.find(&pending.id).await.unwrap().unwrap();
    assert_eq!(stored.recovery_ends_at, Some(at(1_000)));
    let due = |now| {
        let stores = stores.clone();
        async move {
            stores
                .devices
                .due_recoveries(now, 100)
                .await
                .unwrap()
                .into_iter()
                .map(|device| device.id)
                .collect::<Vec<_>>()
        }
    };
    assert!(!due(at(999)).await.contains(&pending.id));
    assert!(due(at(1_000)).await.contains(&pending.id));
    // Once active (or removed), it is no longer due.
    assert!(
        stores
            .devices
            .set_status(
                &pending.id,
                &[DeviceStatus::Pending],
                DeviceStatus::Active,
                at(1_000),
                &Effects::default(),
            )
            .await
            .unwrap()
    );
    assert!(!due(at(2_000)).await.contains(&pending.id));
}
