//! `EndUserService` on in-memory fakes (issue 13 §7): enrollment, passkeys, devices and tokens
//! proven without a database or HTTP — with the real WebAuthn adapter and a software passkey,
//! since the ceremony is what these rules guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use idconsent_approval::ApprovalRegistry;
use idconsent_enduser::model::{DeviceStatus, EnrollmentStatus};
use idconsent_enduser::testing::InMemoryEndUsers;
use idconsent_enduser::{
    EndUserError, EndUserPorts, EndUserService, EndUserSettings, EnrollRequest,
};
use idconsent_jose::HmacAppTokens;
use idconsent_kernel::id::MessageId;
use idconsent_kernel::{IdGenerator, ManualClock, OsRandom, Timestamp, UlidGenerator, Unmetered};
use idconsent_notification::{NewMessage, NotificationSender, NotifyError};
use idconsent_passkey_soft::SoftPasskey;
use idconsent_vault_ring::{HmacKeyedHash, MasterKey};
use idconsent_webauthn::WebauthnCeremony;
use idconsent_webhook::testing::InMemoryDeliveries;
use serde_json::Value;

const ORIGIN: &str = "http://localhost:8080";
const PHONE: &str = "+15550001234";

/// Keeps every SMS instead of sending it.
#[derive(Debug, Default)]
struct CapturedSms {
    sent: Mutex<Vec<NewMessage>>,
    ids: Mutex<Option<Arc<dyn IdGenerator>>>,
}

#[async_trait]
impl NotificationSender for CapturedSms {
    async fn send(&self, message: NewMessage) -> Result<MessageId, NotifyError> {
        self.sent.lock().unwrap().push(message);
        let ids = self.ids.lock().unwrap().clone().unwrap();
        Ok(ids.next())
    }
}

impl CapturedSms {
    fn last_code(&self) -> String {
        self.sent
            .lock()
            .unwrap()
            .last()
            .and_then(|message| message.code.clone())
            .expect("an SMS code was sent")
    }
}

struct Harness {
    service: EndUserService,
    sms: Arc<CapturedSms>,
}

fn harness() -> Harness {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let deliveries = Arc::new(InMemoryDeliveries::default());
    let store = Arc::new(InMemoryEndUsers::new(deliveries.clone()));
    let sms = Arc::new(CapturedSms::default());
    *sms.ids.lock().unwrap() = Some(ids.clone());
    let service = EndUserService::new(
        EndUserPorts {
            enrollments: store.clone(),
            devices: store.clone(),
            challenges: store.clone(),
            refresh_tokens: store,
            passkeys: Arc::new(WebauthnCeremony::new("localhost", &[ORIGIN]).unwrap()),
            access_tokens: Arc::new(HmacAppTokens::new(&[9; 32]).unwrap()),
            approvals: Arc::new(ApprovalRegistry::new()),
            metering: Arc::new(Unmetered),
            notifications: sms.clone(),
            events: deliveries,
            hasher: Arc::new(HmacKeyedHash::new(&MasterKey::new([3; 32]))),
            clock,
            ids,
            random: Arc::new(OsRandom),
            outbox_written: None,
        },
        EndUserSettings::default(),
    );
    Harness { service, sms }
}

/// A phone with a software passkey and an installation id, as the app would be.
struct App {
    passkey: SoftPasskey,
    installation: String,
}

impl App {
    fn new(installation: &str) -> Self {
        Self {
            passkey: SoftPasskey::new().unwrap(),
            installation: installation.to_owned(),
        }
    }

    /// Enrolls `PHONE`, registers the passkey, and returns the enrollment id.
    async fn enroll_and_register(&mut self, harness: &Harness) -> (String, DeviceStatus) {
        let enrollment = harness
            .service
            .enroll(
                EnrollRequest {
                    phone: PHONE.into(),
                    device_name: Some("Test phone".into()),
                    platform: Some("android".into()),
                    ..EnrollRequest::default()
                },
                &self.installation,
                None,
            )
            .await
            .unwrap();
        let code = harness.sms.last_code();
        let (challenge, options) = harness
            .service
            .register_begin(enrollment.id.as_str(), &code)
            .await
            .unwrap();
        let credential = self.passkey.register(ORIGIN, &options).unwrap();
        let device = harness
            .service
            .register_complete(challenge.as_str(), &credential, Some(&self.installation))
            .await
            .unwrap();
        (enrollment.id.as_str().to_owned(), device.status)
    }

    async fn assert_for(
        &mut self,
        harness: &Harness,
        purpose: &str,
        id: Option<String>,
    ) -> (String, Value) {
        let started = harness
            .service
            .authenticate_begin(PHONE, purpose, id)
            .await
            .unwrap();
        let credential = self.passkey.authenticate(ORIGIN, &started.options).unwrap();
        (started.challenge_id.as_str().to_owned(), credential)
    }
}

#[tokio::test]
async fn an_enrollment_is_completed_by_an_assertion_with_the_new_passkey() {
    let harness = harness();
    let mut app = App::new("install-1");
    let (enrollment, status) = app.enroll_and_register(&harness).await;
    assert_eq!(status, DeviceStatus::Active, "the first device of a phone");
    let (challenge, credential) = app
        .assert_for(&harness, "enrollment", Some(enrollment.clone()))
        .await;
    let completed = harness
        .service
        .verify_enrollment(&enrollment, &challenge, &credential)
        .await
        .unwrap();
    assert_eq!(completed.status, EnrollmentStatus::Completed);
    // The challenge was spent: the same assertion again is refused.
    let replay = harness
        .service
        .verify_enrollment(&enrollment, &challenge, &credential)
        .await;
    assert!(replay.is_err(), "{replay:?}");
}

#[tokio::test]
async fn five_wrong_codes_end_the_enrollment() {
    let harness = harness();
    let enrollment = harness
        .service
        .enroll(
            EnrollRequest {
                phone: PHONE.into(),
                ..EnrollRequest::default()
            },
            "install-1",
            None,
        )
        .await
        .unwrap();
    let code = harness.sms.last_code();
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for _ in 0..5 {
        let refused = harness
            .service
            .register_begin(enrollment.id.as_str(), wrong)
            .await;
        assert!(refused.is_err());
    }
    // The right code no longer works.
    let late = harness
        .service
        .register_begin(enrollment.id.as_str(), &code)
        .await;
    assert!(late.is_err(), "{late:?}");
    let read = harness
        .service
        .enrollment(enrollment.id.as_str())
        .await
        .unwrap();
    assert_eq!(read.status, EnrollmentStatus::Failed);
}

#[tokio::test]
async fn tokens_rotate_and_a_reused_refresh_token_ends_the_sign_in() {
    let harness = harness();
    let mut app = App::new("install-1");
    let (enrollment, _) = app.enroll_and_register(&harness).await;
    let (challenge, credential) = app
        .assert_for(&harness, "enrollment", Some(enrollment.clone()))
        .await;
    harness
        .service
        .verify_enrollment(&enrollment, &challenge, &credential)
        .await
        .unwrap();

    let (challenge, credential) = app.assert_for(&harness, "login", None).await;
    let first = harness
        .service
        .login(&challenge, &credential, "install-1")
        .await
        .unwrap();
    harness
        .service
        .authorize(&first.access_token, "install-1")
        .await
        .unwrap();
    assert!(
        harness
            .service
            .authorize(&first.access_token, "another-installation")
            .await
            .is_err(),
        "bound to its installation"
    );
    let second = harness
        .service
        .refresh(&first.refresh_token, "install-1")
        .await
        .unwrap();
    harness
        .service
        .authorize(&second.access_token, "install-1")
        .await
        .unwrap();
    // The first refresh token again: the whole sign-in ends, access tokens included.
    let reused = harness
        .service
        .refresh(&first.refresh_token, "install-1")
        .await;
    assert!(
        matches!(reused, Err(EndUserError::Unauthorized(_))),
        "{reused:?}"
    );
    for token in [&first.access_token, &second.access_token] {
        assert!(harness.service.authorize(token, "install-1").await.is_err());
    }
}

#[tokio::test]
async fn a_second_device_of_an_enrolled_phone_cannot_sign_in_until_approved() {
    let harness = harness();
    let mut first = App::new("install-1");
    let (enrollment, _) = first.enroll_and_register(&harness).await;
    let (challenge, credential) = first
        .assert_for(&harness, "enrollment", Some(enrollment.clone()))
        .await;
    harness
        .service
        .verify_enrollment(&enrollment, &challenge, &credential)
        .await
        .unwrap();

    // Someone with the SMS code registers another passkey for the same phone.
    let mut second = App::new("install-2");
    let (_, status) = second.enroll_and_register(&harness).await;
    assert_eq!(status, DeviceStatus::Pending, "ADR 0013: approval first");
    let started = harness
        .service
        .authenticate_begin(PHONE, "login", None)
        .await
        .unwrap();
    // Only active devices are offered to sign in with: the pending passkey is not among them,
    // so the authenticator has nothing to answer with.
    let offered = started.options["publicKey"]["allowCredentials"].to_string();
    let second_device = second.passkey.authenticate(ORIGIN, &started.options);
    assert!(second_device.is_err(), "offered: {offered}");
    // The first device still signs in.
    let credential = first
        .passkey
        .authenticate(ORIGIN, &started.options)
        .unwrap();
    harness
        .service
        .login(started.challenge_id.as_str(), &credential, "install-1")
        .await
        .unwrap();
}
