//! The end-user storage contract. Adapters run it through `enduser_store_contract!(make)`,
//! `make` being an `async fn() -> Option<(Stores, G)>`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod challenges;
mod devices;
mod enrollments;
mod tokens;

pub use challenges::*;
pub use devices::*;
pub use enrollments::*;
pub use tokens::*;

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
