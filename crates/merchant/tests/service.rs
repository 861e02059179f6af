//! `MerchantService` on the in-memory store (`InMemoryMerchants`, which passes the store
//! contract) with the real adapters of the other ports: Argon2id passwords, HS256 session
//! tokens, ring's vault and keyed hash, the sandbox registry, the filesystem blob store, and the
//! notifier queueing into the in-memory message store, read back as the dev mailbox does.
//! Time is a `ManualClock`: expiry and lock-outs are reached by moving it, never by sleeping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use idconsent_blob_fs::FsBlobStore;
use idconsent_jose::HmacSessionTokens;
use idconsent_kernel::id::{ApplicationId, MerchantUserId};
use idconsent_kernel::{
    Clock, Environment, IdGenerator, KeyedHash, ManualClock, OsRandom, PageRequest, SecretVault,
    Timestamp, UlidGenerator,
};
use idconsent_merchant::golive::Requirement;
use idconsent_merchant::model::{
    Application, DocumentStatus, MerchantStatus, MerchantUser, RegistryStatus, Role, UserStatus,
    sealing,
};
use idconsent_merchant::ports::{ApplicationRepository, TeamRepository};
use idconsent_merchant::testing::InMemoryMerchants;
use idconsent_merchant::{
    API_KEY_HASH_PURPOSE, Actor, ApiKey, ApplicationInput, BusinessPatch, CreatedApplication,
    DocumentUpload, MerchantError, MerchantPorts, MerchantService, MerchantSettings,
    RegisterRequest, Registered,
};
use idconsent_notification::testing::InMemoryMessageStore;
use idconsent_notification::{Message, MessageStore, Notifier};
use idconsent_password_argon2::{Argon2Passwords, HashingLimits};
use idconsent_registry::SandboxRegistry;
use idconsent_vault_ring::{AesGcmVault, HmacKeyedHash, MasterKey};
use tempfile::TempDir;

const START: Timestamp = Timestamp::from_millis(1_763_719_200_000);
const PASSWORD: &str = "correct horse battery staple";

struct Harness {
    service: MerchantService,
    store: Arc<InMemoryMerchants>,
    clock: Arc<ManualClock>,
    mailbox: Arc<InMemoryMessageStore>,
    hasher: Arc<dyn KeyedHash>,
    vault: Arc<dyn SecretVault>,
    _blobs: TempDir,
}

fn harness() -> Harness {
    let clock = Arc::new(ManualClock::new(START));
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let store = Arc::new(InMemoryMerchants::new());
    let mailbox = Arc::new(InMemoryMessageStore::default());
    let master = MasterKey::new([7; 32]);
    let hasher: Arc<dyn KeyedHash> = Arc::new(HmacKeyedHash::new(&master));
    let vault: Arc<dyn SecretVault> = Arc::new(AesGcmVault::new(&master));
    let blobs = tempfile::tempdir().unwrap();
    // The production cost (the adapter has no knob); a long queue wait so a loaded test machine
    // never turns a sign-in away as `Busy`.
    let passwords = Argon2Passwords::new(HashingLimits {
        concurrency: 4,
        queue_wait: Duration::from_secs(60),
    })
    .unwrap();
    let service = MerchantService::new(
        MerchantPorts {
            merchants: store.clone(),
            team: store.clone(),
            codes: store.clone(),
            applications: store.clone(),
            registry: Arc::new(SandboxRegistry),
            passwords: Arc::new(passwords),
            tokens: Arc::new(HmacSessionTokens::new(&[9; 32]).unwrap()),
            vault: vault.clone(),
            hasher: hasher.clone(),
            blobs: Arc::new(FsBlobStore::new(blobs.path())),
            notifications: Arc::new(Notifier::new(
                mailbox.clone(),
                clock.clone(),
                ids.clone(),
                None,
            )),
            clock: clock.clone(),
            ids,
            random: Arc::new(OsRandom),
        },
        MerchantSettings::new("https://dashboard.example", false),
    );
    Harness {
        service,
        store,
        clock,
        mailbox,
        hasher,
        vault,
        _blobs: blobs,
    }
}

fn register_request(email: &str, phone: &str) -> RegisterRequest {
    RegisterRequest {
        business_name: "Acme Payments".into(),
        contact_name: "Ada Obi".into(),
        email: email.into(),
        password: PASSWORD.into(),
        entity_type: "limited_company".into(),
        registration_number: "RC-1234567".into(),
        date_registered: "2019-03-04".into(),
        industry: "fintech".into(),
        phone: phone.into(),
    }
}

impl Harness {
    fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    async fn register(&self, email: &str, phone: &str) -> (Registered, Actor) {
        let registered = self
            .service
            .register(register_request(email, phone))
            .await
            .unwrap();
        let actor = self
            .service
            .authenticate(&registered.session.token)
            .await
            .unwrap();
        (registered, actor)
    }

    /// Everything sent to `to` with that subject, oldest first.
    async fn mail(&self, to: &str, subject: &str) -> Vec<Message> {
        let mut found: Vec<Message> = self
            .mailbox
            .list_for(to, 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.subject.starts_with(subject))
            .collect();
        found.sort_by_key(|m| m.created_at);
        found
    }

    async fn last_phone_code(&self, phone: &str) -> String {
        let sent = self.mail(phone, "idconsent verification code").await;
        sent.last().unwrap().code.clone().unwrap()
    }

    /// The `token=` of the newest link with that subject sent to `email`.
    async fn last_link_token(&self, email: &str, subject: &str) -> String {
        let sent = self.mail(email, subject).await;
        let link = sent.last().unwrap().link.clone().unwrap();
        link.split_once("token=").unwrap().1.to_owned()
    }

    async fn invite(&self, actor: &Actor, email: &str, role: &str) -> (MerchantUserId, Actor) {
        let member = self
            .service
            .invite_member(actor, email, "A Member", role)
            .await
            .unwrap();
        let token = self.last_link_token(email, "You are invited").await;
        let session = self
            .service
            .accept_invitation(&token, PASSWORD)
            .await
            .unwrap();
        let actor = self.service.authenticate(&session.token).await.unwrap();
        (member.id, actor)
    }

    async fn create_application(&self, actor: &Actor, name: &str) -> CreatedApplication {
        self.service
            .create_application(
                actor,
                ApplicationInput {
                    name: Some(name.into()),
                    callback_url: Some("https://shop.example/idconsent/callback".into()),
                    ..ApplicationInput::default()
                },
            )
            .await
            .unwrap()
    }

    /// The application as stored, read straight from the store.
    async fn stored_application(&self, id: &ApplicationId) -> Application {
        ApplicationRepository::find(self.store.as_ref(), id)
            .await
            .unwrap()
            .unwrap()
    }

    /// The member as stored, read straight from the store.
    async fn stored_member(&self, id: &MerchantUserId) -> MerchantUser {
        TeamRepository::find(self.store.as_ref(), id)
            .await
            .unwrap()
            .unwrap()
    }

    fn key_hash(&self, key: &ApiKey) -> String {
        self.hasher
            .hex(API_KEY_HASH_PURPOSE, key.as_str().as_bytes())
    }

    /// Fills in everything the go-live checklist asks for.
    async fn complete_onboarding(&self, actor: &Actor, email: &str, phone: &str) {
        let token = self.last_link_token(email, "Confirm your email").await;
        self.service.verify_email_link(&token).await.unwrap();
        let code = self.last_phone_code(phone).await;
        self.service.verify_phone(actor, &code).await.unwrap();
        self.service
            .update_business(
                actor,
                BusinessPatch {
                    address: Some("1 Market Street, Lagos".into()),
                    usecase: Some("Sign-in for our customers".into()),
                    description: Some("Card payments for small shops".into()),
                    identity_type: Some("passport".into()),
                    identity_number: Some("A12345678".into()),
                    ..BusinessPatch::default()
                },
            )
            .await
            .unwrap();
        for kind in ["business_registration", "representative_id"] {
            let content = b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n1 0 obj\n".to_vec();
            self.service
                .upload_document(
                    actor,
                    DocumentUpload {
                        document_type: kind.into(),
                        file_name: format!("{kind}.pdf"),
                        mime_type: "application/pdf".into(),
                        declared_size: content.len() as u64,
                        content,
                    },
                )
                .await
                .unwrap();
        }
    }
}

/// How many attempts were refused as wrong, and how many as locked out.
fn login_outcomes<T>(results: &[Result<T, MerchantError>]) -> (usize, usize) {
    let wrong = results
        .iter()
        .filter(|r| matches!(r, Err(MerchantError::InvalidCredentials)))
        .count();
    let locked = results
        .iter()
        .filter(|r| matches!(r, Err(MerchantError::LockedOut { .. })))
        .count();
    (wrong, locked)
}

// ---------------------------------------------------------------------------------------------
// Registration and sign-in

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

// ---------------------------------------------------------------------------------------------
// Email and phone verification

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

// ---------------------------------------------------------------------------------------------
// Team

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

// ---------------------------------------------------------------------------------------------
// Applications and credentials

#[tokio::test]
async fn a_rotated_api_key_stops_working_at_once_and_the_secret_stays() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let created = h.create_application(&owner, "Checkout").await;
    let application = &created.view.application;
    let old_key = created.view.sandbox_api_key.clone();
    assert!(old_key.as_str().starts_with("mk_test_"));
    assert_eq!(created.view.live_api_key, None);
    let found = h
        .store
        .find_by_key_hash(&h.key_hash(&old_key))
        .await
        .unwrap();
    assert_eq!(
        found.map(|(a, env)| (a.id, env)),
        Some((application.id.clone(), Environment::Sandbox))
    );

    h.advance(Duration::from_secs(5));
    let rotated = h
        .service
        .rotate_key(&owner, application.id.as_str(), "sandbox")
        .await
        .unwrap();
    assert_ne!(rotated.api_key, old_key);
    assert_eq!(
        h.store
            .find_by_key_hash(&h.key_hash(&old_key))
            .await
            .unwrap(),
        None
    );
    let (current, environment) = h
        .store
        .find_by_key_hash(&h.key_hash(&rotated.api_key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(environment, Environment::Sandbox);
    assert_eq!(current.secret, application.secret);
    let view = h
        .service
        .application(&owner, application.id.as_str())
        .await
        .unwrap();
    assert_eq!(view.sandbox_api_key, rotated.api_key);

    let live = h
        .service
        .rotate_key(&owner, application.id.as_str(), "live")
        .await;
    assert!(matches!(live, Err(MerchantError::Conflict(_))), "{live:?}");
}

#[tokio::test]
async fn a_rotated_signing_secret_keeps_verifying_for_the_overlap_only() {
    let h = harness();
    let (_, owner) = h.register("ada@acme.example", "+2348012345678").await;
    let created = h.create_application(&owner, "Checkout").await;
    let id = created.view.application.id.clone();

    let rotated = h.service.rotate_secret(&owner, id.as_str()).await.unwrap();
    assert_ne!(rotated.secret, created.secret);
    let overlap = h.service.settings().webhook_secret_overlap;
    assert_eq!(rotated.previous_expires_at, h.now().plus(overlap));

    let open = |at: Timestamp, application: &Application| {
        application
            .request_secrets(at)
            .into_iter()
            .map(|sealed| {
                let plain = h.vault.open(sealed, sealing::request_secret(&id)).unwrap();
                String::from_utf8(plain).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let stored = h.stored_application(&id).await;
    assert_eq!(
        open(h.now(), &stored),
        [rotated.secret.clone(), created.secret.clone()]
    );
    h.advance(overlap);
    assert_eq!(open(h.now(), &stored), [rotated.secret]);

    let webhook = h
        .service
        .rotate_webhook_secret(&owner, id.as_str())
        .await
        .unwrap();
    let stored = h.stored_application(&id).await;
    assert_eq!(stored.signing_webhook_secrets(h.now()).len(), 2);
    assert_eq!(
        h.vault
            .open(&stored.webhook_secret, sealing::webhook_secret(&id))
            .unwrap(),
        webhook.secret.as_bytes()
    );
}

// ---------------------------------------------------------------------------------------------
// Go-live

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
