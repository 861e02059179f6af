//! The end-user storage contract. Adapters run it through `enduser_store_contract!(make)`,
//! `make` being an `async fn() -> Option<(Stores, G)>`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::events::{
    AUTH_SUCCESS, DEVICE_DEREGISTERED, DEVICE_RECOVERY_STARTED, DEVICE_REGISTERED,
    ENROLLMENT_COMPLETED,
};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_kernel::id::{ApplicationId, EnrollmentId};
use idconsent_kernel::{
    Environment, IdGenerator, OsRandom, PageRequest, PhoneNumber, RandomSource, SystemClock,
    Timestamp, UlidGenerator,
};
use idconsent_webhook::{DeliveryStore, Effects, EventType, Outbox};
use serde_json::json;

use crate::model::{
    Audience, Challenge, Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus, Purpose,
    RefreshToken,
};
use crate::ports::{
    Admitted, AssertionInputs, ChallengeRepository, DeviceRepository, EnrollmentRepository,
    NextToken, RefreshTokenRepository, Rotation, Spent, StoreError,
};

/// The ports an end-user store provides together.
#[derive(Debug, Clone)]
pub struct Stores {
    pub enrollments: Arc<dyn EnrollmentRepository>,
    pub devices: Arc<dyn DeviceRepository>,
    pub challenges: Arc<dyn ChallengeRepository>,
    pub refresh_tokens: Arc<dyn RefreshTokenRepository>,
    /// Where outbox entries written with state changes can be read back.
    pub deliveries: Arc<dyn DeliveryStore>,
}

#[macro_export]
macro_rules! enduser_store_contract {
    ($make:path) => {
        $crate::enduser_store_contract!(@cases $make;
            an_enrollment_comes_back_as_stored,
            attempts_are_taken_atomically_and_a_failure_is_final,
            enrollments_of_a_phone_are_limited_even_concurrently,
            one_user_per_phone_even_when_enrolling_concurrently,
            registering_a_device_moves_the_enrollment_once,
            a_credential_is_registered_once,
            a_registration_judged_on_stale_devices_changes_nothing,
            of_concurrent_first_registrations_of_a_user_one_succeeds,
            a_recovery_starts_once_and_comes_due_on_time,
            completing_marks_the_user_enrolled_with_its_events,
            blocking_a_device_revokes_its_refresh_tokens,
            record_use_updates_only_active_devices,
            record_use_needs_the_counter_to_advance,
            a_challenge_is_consumed_once_even_concurrently,
            an_assertion_reads_challenge_device_and_user_together,
            spending_an_assertion_is_all_or_nothing,
            an_assertion_is_spent_once_even_concurrently,
            an_expired_challenge_cannot_be_consumed,
            expired_challenges_are_forgotten,
            a_refresh_token_rotates_once_and_reuse_revokes_the_family,
            a_refresh_token_from_another_installation_is_invalid,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((stores, _guard)) = $make().await else { return };
                $crate::contract::$case(stores).await;
            }
        )*
    };
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

fn random() -> Arc<dyn RandomSource> {
    Arc::new(OsRandom)
}

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

fn phone() -> PhoneNumber {
    PhoneNumber::parse(&format!("+1555{}", random().digits(7))).unwrap()
}

fn audience() -> Audience {
    Audience {
        application_id: ids().next::<ApplicationId>(),
        environment: Environment::Sandbox,
        callback_url: "https://shop.example/hooks".into(),
    }
}

fn enrollment(phone: &PhoneNumber, audience: Option<Audience>) -> Enrollment {
    Enrollment {
        id: ids().next(),
        phone: phone.clone(),
        name: Some("Ada".into()),
        device_name: Some("Pixel".into()),
        platform: Some("android".into()),
        installation: "install-1".into(),
        audience,
        status: EnrollmentStatus::PendingOtp,
        otp_hash: "ab".repeat(32),
        otp_attempts_left: 5,
        otp_expires_at: at(600_000),
        device_id: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

fn user(phone: &PhoneNumber) -> EndUser {
    EndUser {
        id: ids().next(),
        phone: phone.clone(),
        handle: random().hex(16),
        name: None,
        enrolled_at: None,
        created_at: at(0),
    }
}

fn device(user: &EndUser, audience: Option<Audience>) -> Device {
    Device {
        id: ids().next(),
        user_id: user.id.clone(),
        name: "Pixel".into(),
        platform: "android".into(),
        installation: "install-1".into(),
        audience,
        status: DeviceStatus::Active,
        credential_id: random().hex(32),
        passkey: "{\"key\":\"k\"}".into(),
        counter: 3,
        created_at: at(0),
        last_used_at: None,
        recovery_ends_at: None,
    }
}

fn event(audience: &Audience, event_type: EventType, marker: &str) -> Outbox {
    Outbox::new(
        ids().as_ref(),
        event_type,
        audience.application_id.clone(),
        audience.environment,
        at(0),
        json!({"marker": marker}),
        &[&audience.callback_url],
    )
}

async fn events_for(stores: &Stores, audience: &Audience) -> Vec<EventType> {
    let page = stores
        .deliveries
        .list(
            &audience.application_id,
            audience.environment,
            None,
            PageRequest::new(Some(1), Some(100)).unwrap(),
        )
        .await
        .unwrap();
    let mut types: Vec<EventType> = page.items.iter().map(|d| d.event_type.clone()).collect();
    types.sort();
    types
}

/// A user with a registered device behind a `passkey_registered` enrollment.
async fn registered(stores: &Stores, audience: Option<Audience>) -> (Enrollment, EndUser, Device) {
    let phone = phone();
    let enrollment = enrollment(&phone, audience.clone());
    stores.enrollments.insert(&enrollment).await.unwrap();
    let user = stores.enrollments.ensure_user(&user(&phone)).await.unwrap();
    let device = device(&user, audience);
    stores
        .devices
        .register(&device, &enrollment.id, at(1), &[], 0)
        .await
        .unwrap();
    (enrollment, user, device)
}

fn challenge(phone: &PhoneNumber, expires_at: Timestamp) -> Challenge {
    Challenge {
        id: ids().next(),
        purpose: Purpose {
            kind: crate::model::LOGIN,
            id: None,
        },
        phone: phone.clone(),
        enrollment_id: None,
        state: "{\"ast\":{}}".into(),
        context_hash: Some("00".repeat(32)),
        expires_at,
        used_at: None,
        created_at: at(0),
    }
}

fn refresh(device: &Device) -> RefreshToken {
    RefreshToken {
        hash: random().hex(64),
        family: ids().next(),
        user_id: device.user_id.clone(),
        device_id: device.id.clone(),
        installation: "install-1".into(),
        expires_at: at(3_600_000),
        used_at: None,
        revoked_at: None,
        created_at: at(0),
    }
}

fn next(installation: &str) -> NextToken {
    NextToken {
        hash: random().hex(64),
        installation: installation.into(),
        expires_at: at(7_200_000),
    }
}

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

pub async fn a_challenge_is_consumed_once_even_concurrently(stores: Stores) {
    let challenge = challenge(&phone(), at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();
    assert_eq!(
        stores.challenges.find(&challenge.id).await.unwrap(),
        Some(challenge.clone())
    );
    let racers = (0..8).map(|_| {
        let stores = stores.clone();
        let id = challenge.id.clone();
        async move { stores.challenges.consume(&id, at(1_000)).await.unwrap() }
    });
    let won = join_all(racers)
        .await
        .into_iter()
        .filter(|won| *won)
        .count();
    assert_eq!(won, 1);
    let stored = stores
        .challenges
        .find(&challenge.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.used_at, Some(at(1_000)));
}

pub async fn an_assertion_reads_challenge_device_and_user_together(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let challenge = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();

    let read = stores
        .challenges
        .read_assertion(&challenge.id, Some(&device.credential_id))
        .await
        .unwrap();
    assert_eq!(
        read,
        AssertionInputs {
            challenge: Some(challenge.clone()),
            device: Some(device.clone()),
            user: Some(user.clone()),
        }
    );
    let without_credential = stores
        .challenges
        .read_assertion(&challenge.id, None)
        .await
        .unwrap();
    assert_eq!(without_credential.challenge, Some(challenge.clone()));
    assert_eq!(
        (without_credential.device, without_credential.user),
        (None, None)
    );
    let unknown = stores
        .challenges
        .read_assertion(&ids().next(), Some("unknown-credential"))
        .await
        .unwrap();
    assert_eq!(
        unknown,
        AssertionInputs {
            challenge: None,
            device: None,
            user: None,
        }
    );
}

pub async fn spending_an_assertion_is_all_or_nothing(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let spend = |challenge: &Challenge, counter: u32, when: i64| {
        let stores = stores.clone();
        let (challenge, device) = (challenge.id.clone(), device.id.clone());
        async move {
            stores
                .challenges
                .spend_assertion(&challenge, &device, counter, at(when))
                .await
                .unwrap()
        }
    };
    let first = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&first).await.unwrap();

    // A counter that does not advance (stored 3): the challenge stays unused.
    assert_eq!(spend(&first, 3, 10).await, Spent::DeviceRefused);
    let stored = stores.challenges.find(&first.id).await.unwrap().unwrap();
    assert_eq!(stored.used_at, None, "rolled back");

    assert_eq!(spend(&first, 5, 20).await, Spent::Spent);
    let stored = stores.challenges.find(&first.id).await.unwrap().unwrap();
    assert_eq!(stored.used_at, Some(at(20)));
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (5, Some(at(20))));

    // A used challenge: the device is left alone.
    assert_eq!(spend(&first, 6, 30).await, Spent::ChallengeUnusable);
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!((stored.counter, stored.last_used_at), (5, Some(at(20))));

    // An expired challenge, and an unknown one.
    let expired = challenge(&user.phone, at(40));
    stores.challenges.insert(&expired).await.unwrap();
    assert_eq!(spend(&expired, 6, 40).await, Spent::ChallengeUnusable);
    let unknown = challenge(&user.phone, at(120_000));
    assert_eq!(spend(&unknown, 6, 40).await, Spent::ChallengeUnusable);

    // A blocked device: the challenge stays unused.
    let live = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&live).await.unwrap();
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
    assert_eq!(spend(&live, 6, 60).await, Spent::DeviceRefused);
    let stored = stores.challenges.find(&live.id).await.unwrap().unwrap();
    assert_eq!(stored.used_at, None);
    let stored = stores.devices.find(&device.id).await.unwrap().unwrap();
    assert_eq!(stored.counter, 5);
}

pub async fn an_assertion_is_spent_once_even_concurrently(stores: Stores) {
    let (_, user, device) = registered(&stores, None).await;
    let challenge = challenge(&user.phone, at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();
    let racers = (0..8u32).map(|n| {
        let stores = stores.clone();
        let (challenge, device) = (challenge.id.clone(), device.id.clone());
        async move {
            stores
                .challenges
                .spend_assertion(&challenge, &device, 10 + n, at(1_000))
                .await
                .unwrap()
        }
    });
    let outcomes = join_all(racers).await;
    assert_eq!(
        outcomes.iter().filter(|o| **o == Spent::Spent).count(),
        1,
        "{outcomes:?}"
    );
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Spent::Spent | Spent::ChallengeUnusable))
    );
}

pub async fn an_expired_challenge_cannot_be_consumed(stores: Stores) {
    let challenge = challenge(&phone(), at(120_000));
    stores.challenges.insert(&challenge).await.unwrap();
    assert!(
        !stores
            .challenges
            .consume(&challenge.id, at(120_000))
            .await
            .unwrap()
    );
}

pub async fn expired_challenges_are_forgotten(stores: Stores) {
    let old = challenge(&phone(), at(1_000));
    let live = challenge(&phone(), at(5_000));
    stores.challenges.insert(&old).await.unwrap();
    stores.challenges.insert(&live).await.unwrap();
    let forgotten = stores.challenges.forget_expired(at(2_000)).await.unwrap();
    assert!(forgotten >= 1);
    assert_eq!(stores.challenges.find(&old.id).await.unwrap(), None);
    assert!(stores.challenges.find(&live.id).await.unwrap().is_some());
}

pub async fn a_refresh_token_rotates_once_and_reuse_revokes_the_family(stores: Stores) {
    let (_, _, device) = registered(&stores, None).await;
    let first = refresh(&device);
    stores.refresh_tokens.insert(&first).await.unwrap();
    let revoked = |family| {
        let stores = stores.clone();
        async move { stores.refresh_tokens.family_revoked(&family).await.unwrap() }
    };
    assert!(!revoked(first.family.clone()).await);
    assert!(
        !revoked(ids().next()).await,
        "an unknown family is not revoked"
    );

    let successor = next("install-1");
    let Rotation::Rotated(second) = stores
        .refresh_tokens
        .rotate(&first.hash, &successor, at(10))
        .await
        .unwrap()
    else {
        panic!("a live token rotates");
    };
    assert_eq!(second.hash, successor.hash);
    assert_eq!(second.family, first.family);
    assert_eq!(second.user_id, first.user_id);
    assert_eq!(second.device_id, first.device_id);
    assert_eq!(second.expires_at, successor.expires_at);

    // The first token again: reuse. The family, the live successor included, is revoked.
    let reused = stores
        .refresh_tokens
        .rotate(&first.hash, &next("install-1"), at(20))
        .await
        .unwrap();
    assert_eq!(reused, Rotation::Reused(first.family.clone()));
    assert!(revoked(first.family.clone()).await);
    let after = stores
        .refresh_tokens
        .rotate(&second.hash, &next("install-1"), at(30))
        .await
        .unwrap();
    assert_eq!(after, Rotation::Invalid);

    // Concurrent rotations of one live token: exactly one wins.
    let third = refresh(&device);
    stores.refresh_tokens.insert(&third).await.unwrap();
    let racers = (0..6).map(|_| {
        let stores = stores.clone();
        let hash = third.hash.clone();
        async move {
            stores
                .refresh_tokens
                .rotate(&hash, &next("install-1"), at(40))
                .await
                .unwrap()
        }
    });
    let outcomes = join_all(racers).await;
    let rotated = outcomes
        .iter()
        .filter(|o| matches!(o, Rotation::Rotated(_)))
        .count();
    assert_eq!(rotated, 1, "{outcomes:?}");
    let unknown = stores
        .refresh_tokens
        .rotate(&random().hex(64), &next("install-1"), at(50))
        .await
        .unwrap();
    assert_eq!(unknown, Rotation::Invalid);
}

pub async fn a_refresh_token_from_another_installation_is_invalid(stores: Stores) {
    let (_, _, device) = registered(&stores, None).await;
    let token = refresh(&device);
    stores.refresh_tokens.insert(&token).await.unwrap();
    let elsewhere = stores
        .refresh_tokens
        .rotate(&token.hash, &next("install-2"), at(10))
        .await
        .unwrap();
    assert_eq!(elsewhere, Rotation::Invalid);
    // And it changed nothing: the right installation can still use it.
    let home = stores
        .refresh_tokens
        .rotate(&token.hash, &next("install-1"), at(20))
        .await
        .unwrap();
    assert!(matches!(home, Rotation::Rotated(_)), "{home:?}");
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
