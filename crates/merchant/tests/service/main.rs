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

mod credentials;
mod golive;
mod signin;
mod team;
mod verification;
