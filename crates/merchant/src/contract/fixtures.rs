//! Fixtures shared by the cases: fresh ids and emails per case, so stores may be reused.

use std::sync::Arc;

use idconsent_kernel::id::{ApplicationId, ClientId, DocumentId, MerchantId, MerchantUserId};
use idconsent_kernel::{
    CalendarDate, EmailAddress, Environment, IdGenerator, Intent, OsRandom, PhoneNumber,
    RandomSource, Sealed, SystemClock, Timestamp, UlidGenerator, WebUrl,
};

use crate::model::{
    Application, BusinessProfile, Document, DocumentFormat, DocumentStatus, DocumentType,
    IdentityType, KeyRecord, Merchant, MerchantStatus, MerchantUser, RegistryStatus, RequestTypes,
    Role, UserStatus,
};
use crate::ports::{CodePurpose, NewKey, OneTimeCode, RepositoryError};

use super::MerchantStores;

pub(super) const T0: Timestamp = Timestamp::from_millis(1_763_719_200_000);

pub(super) fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset_ms)
}

pub(super) fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

/// Lowercase hex of `bytes` random bytes: unique key hashes, fingerprints, scopes.
pub(super) fn random_hex(bytes: usize) -> String {
    let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
    random.hex(bytes)
}

pub(super) fn unique_email(tag: &str) -> EmailAddress {
    EmailAddress::parse(&format!("{tag}-{}@example.com", random_hex(8)))
        .expect("contract emails are valid")
}

pub(super) fn url(text: &str) -> WebUrl {
    WebUrl::parse(text).expect("contract URLs are valid")
}

pub(super) fn sealed(what: &str) -> Sealed {
    Sealed::from_stored(format!("sealed:{what}:{}", random_hex(8)))
}

pub(super) fn profile() -> BusinessProfile {
    BusinessProfile {
        registered_name: "Acme Payments Ltd".into(),
        registration_number: "RC-1234567".into(),
        date_registered: CalendarDate::parse("2019-03-04").unwrap(),
        address: Some("1 Market Street, Lagos".into()),
        usecase: None,
        description: Some("Card payments for small shops".into()),
        identity_type: Some(IdentityType::Passport),
        identity_number: None,
        registry_status: RegistryStatus::Unverified,
        registry_checked_at: None,
    }
}

pub(super) fn merchant(status: MerchantStatus, created_at: Timestamp) -> Merchant {
    Merchant {
        id: ids().next::<MerchantId>(),
        business_name: "Acme Payments".into(),
        contact_name: "Ada Obi".into(),
        entity_type: "limited_company".into(),
        industry: "fintech".into(),
        email: unique_email("owner"),
        phone: PhoneNumber::parse("+2348012345678").unwrap(),
        email_verified_at: None,
        phone_verified_at: None,
        profile: profile(),
        status,
        submitted_at: None,
        decided_at: None,
        rejection_reason: None,
        plan: "free".into(),
        created_at,
        updated_at: created_at,
    }
}

pub(super) fn member(
    merchant: &MerchantId,
    role: Role,
    status: UserStatus,
    created_at: Timestamp,
) -> MerchantUser {
    MerchantUser {
        id: ids().next::<MerchantUserId>(),
        merchant_id: merchant.clone(),
        email: unique_email(role.as_str()),
        name: format!("A {role}"),
        role,
        status,
        password_hash: (status == UserStatus::Active)
            .then(|| "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".to_owned()),
        failed_logins: 0,
        locked_until: None,
        created_at,
        updated_at: created_at,
    }
}

pub(super) fn owner_of(merchant: &Merchant) -> MerchantUser {
    MerchantUser {
        email: merchant.email.clone(),
        name: merchant.contact_name.clone(),
        ..member(
            &merchant.id,
            Role::Owner,
            UserStatus::Active,
            merchant.created_at,
        )
    }
}

/// A stored merchant of that status, with its owner.
pub(super) async fn stored_merchant(
    stores: &MerchantStores,
    status: MerchantStatus,
    created_at: Timestamp,
) -> (Merchant, MerchantUser) {
    let merchant = merchant(status, created_at);
    let owner = owner_of(&merchant);
    stores.merchants.create(&merchant, &owner).await.unwrap();
    (merchant, owner)
}

pub(super) fn document(merchant: &MerchantId, uploaded_at: Timestamp) -> Document {
    Document {
        id: ids().next::<DocumentId>(),
        merchant_id: merchant.clone(),
        document_type: DocumentType::BusinessRegistration,
        file_name: "certificate.pdf".into(),
        format: DocumentFormat::Pdf,
        size: 48_213,
        sha256: random_hex(32),
        blob_key: format!("documents/{}", random_hex(8)),
        status: DocumentStatus::Uploaded,
        uploaded_at,
    }
}

pub(super) fn new_key(environment: Environment, generated_at: Timestamp) -> NewKey {
    NewKey {
        environment,
        hash: random_hex(32),
        sealed: sealed(environment.as_str()),
        generated_at,
    }
}

pub(super) fn record(key: &NewKey) -> KeyRecord {
    KeyRecord {
        sealed: key.sealed.clone(),
        generated_at: key.generated_at,
    }
}

/// An application as `create` takes it, with the hashes of its keys.
#[derive(Debug, Clone)]
pub(super) struct NewApplication {
    pub(super) application: Application,
    pub(super) sandbox_hash: String,
    pub(super) live_hash: Option<String>,
}

pub(super) fn application(
    merchant: &MerchantId,
    live: bool,
    created_at: Timestamp,
) -> NewApplication {
    let sandbox = new_key(Environment::Sandbox, created_at);
    let live = live.then(|| new_key(Environment::Live, created_at));
    NewApplication {
        application: Application {
            id: ids().next::<ApplicationId>(),
            merchant_id: merchant.clone(),
            client_id: ids().next::<ClientId>(),
            name: "Checkout".into(),
            callback_url: url("https://shop.example/idconsent/callback"),
            redirect_uris: vec![
                url("https://shop.example/return"),
                url("https://shop.example/return?step=2"),
            ],
            request_types: RequestTypes::new([Intent::Login, Intent::Oauth]).unwrap(),
            sandbox_key: record(&sandbox),
            live_key: live.as_ref().map(record),
            secret: sealed("secret"),
            webhook_secret: sealed("webhook"),
            previous_webhook_secret: None,
            previous_secret: None,
            created_at,
            updated_at: created_at,
        },
        sandbox_hash: sandbox.hash,
        live_hash: live.map(|key| key.hash),
    }
}

pub(super) async fn create_application(stores: &MerchantStores, new: &NewApplication) {
    stores
        .applications
        .create(
            &new.application,
            &new.sandbox_hash,
            new.live_hash.as_deref(),
        )
        .await
        .unwrap();
}

/// A stored application of a stored merchant.
pub(super) async fn stored_application(
    stores: &MerchantStores,
    merchant: &Merchant,
    created_at: Timestamp,
) -> NewApplication {
    let new = application(
        &merchant.id,
        merchant.status == MerchantStatus::Live,
        created_at,
    );
    create_application(stores, &new).await;
    new
}

pub(super) fn code(purpose: CodePurpose, subject: &str, attempts_left: u32) -> OneTimeCode {
    OneTimeCode {
        purpose,
        subject: subject.to_owned(),
        code_hash: random_hex(32),
        expires_at: at(600_000),
        attempts_left,
        created_at: T0,
    }
}

pub(super) fn is_conflict(result: &Result<(), RepositoryError>, tag: &str) -> bool {
    matches!(result, Err(RepositoryError::Conflict(t)) if *t == tag)
}
