//! The contracts of the merchant repositories ([`MerchantRepository`], [`TeamRepository`],
//! [`CodeRepository`], [`ApplicationRepository`]):
//! every adapter runs these cases against a fresh store.
//!
//! Several cases need more than one port of the same store (approval needs applications), so
//! the factory hands out a [`MerchantStores`] bundle. Use it through the macro, which makes one
//! test per case:
//!
//! ```text
//! async fn stores() -> Option<(MerchantStores, TestDatabase)> { /* fresh */ }
//! idconsent_merchant::merchant_store_contract!(stores);
//! ```
//!
//! The factory returns `None` to skip (a backend that is not configured locally); it should
//! print why. Cases assert only what the ports document.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use futures_util::future::{join, join_all};
use idconsent_kernel::id::{ApplicationId, ClientId, DocumentId, MerchantId, MerchantUserId};
use idconsent_kernel::{
    CalendarDate, EmailAddress, Environment, IdGenerator, Intent, OsRandom, PageRequest,
    PhoneNumber, RandomSource, Sealed, SystemClock, Timestamp, UlidGenerator, WebUrl,
};

use crate::login::{LoginAdmission, LoginPolicy};
use crate::model::{
    Application, BusinessProfile, Document, DocumentFormat, DocumentStatus, DocumentType,
    IdentityType, KeyRecord, Merchant, MerchantStatus, MerchantUser, RegistryStatus, RequestTypes,
    RetiringSecret, Role, UserStatus,
};
use crate::ports::{
    ApplicationRepository, CodePurpose, CodeRepository, MerchantRepository, NewKey, OneTimeCode,
    RepositoryError, TeamRepository, conflicts,
};

/// The ports of one store, as the cases use them.
#[derive(Debug, Clone)]
pub struct MerchantStores {
    pub merchants: Arc<dyn MerchantRepository>,
    pub team: Arc<dyn TeamRepository>,
    pub codes: Arc<dyn CodeRepository>,
    pub applications: Arc<dyn ApplicationRepository>,
}

impl MerchantStores {
    /// Every port from one adapter that implements them all.
    pub fn from_one<S>(store: Arc<S>) -> Self
    where
        S: MerchantRepository + TeamRepository + CodeRepository + ApplicationRepository + 'static,
    {
        Self {
            merchants: store.clone(),
            team: store.clone(),
            codes: store.clone(),
            applications: store,
        }
    }
}

/// Runs every case of the contract as its own test. `$make` is an `async fn() ->
/// Option<(MerchantStores, G)>` giving fresh, empty stores and a guard that keeps their
/// backing resources (a temporary database) alive until the case ends.
#[macro_export]
macro_rules! merchant_store_contract {
    ($make:path) => {
        $crate::merchant_store_contract!(@cases $make;
            // MerchantRepository
            merchants_come_back_as_created_with_their_owner,
            creating_a_merchant_with_a_taken_email_is_duplicate_and_stores_neither,
            merchants_are_listed_newest_first_and_filtered_by_status,
            verifications_and_the_profile_are_saved,
            transition_requires_a_listed_status_and_records_its_time,
            updates_of_an_unknown_merchant_are_not_found,
            documents_are_listed_oldest_first,
            approval_makes_the_merchant_live_with_verified_documents_and_live_keys,
            approval_needs_a_merchant_in_review,
            approval_leaving_an_application_without_a_live_key_changes_nothing,
            approval_and_application_creation_never_interleave,
            // TeamRepository
            members_come_back_and_emails_are_unique_across_merchants,
            finding_by_email_ignores_removed_members,
            the_team_is_everyone_not_removed_oldest_first,
            activation_sets_the_password_of_an_invited_member,
            removal_marks_members_removed_but_keeps_the_last_owner,
            removing_a_member_of_another_merchant_is_not_found,
            concurrent_removals_never_remove_the_last_owner,
            login_attempts_are_taken_locked_and_cleared,
            concurrent_login_attempts_get_no_more_tries_than_sequential_ones,
            a_login_attempt_for_an_unknown_member_is_not_found,
            // CodeRepository
            put_replaces_the_code_of_the_same_purpose_and_subject,
            codes_are_found_whatever_their_expiry,
            taking_attempts_counts_down_to_zero_and_not_below,
            concurrent_attempts_take_no_more_than_are_left,
            a_replacement_waits_for_the_cutoff,
            of_concurrent_replacements_exactly_one_stores,
            consuming_deletes_the_code_once,
            of_concurrent_consumers_exactly_one_wins,
            // ApplicationRepository
            applications_come_back_with_their_current_keys,
            client_ids_and_key_hashes_are_unique,
            applications_carry_a_live_key_exactly_when_the_merchant_is_live,
            applications_are_listed_oldest_first_and_paged,
            update_saves_the_editable_fields_only,
            rotating_a_key_replaces_it_and_the_old_hash_stops_matching,
            rotating_live_without_a_live_key_is_a_conflict,
            rotating_the_webhook_secret_keeps_the_previous_one_signing,
            rotating_the_request_secret_keeps_the_previous_one_verifying,
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

// ---------------------------------------------------------------------------------------------
// Fixtures

const T0: Timestamp = Timestamp::from_millis(1_763_719_200_000);

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + offset_ms)
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

/// Lowercase hex of `bytes` random bytes: unique key hashes, fingerprints, scopes.
fn random_hex(bytes: usize) -> String {
    let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
    random.hex(bytes)
}

fn unique_email(tag: &str) -> EmailAddress {
    EmailAddress::parse(&format!("{tag}-{}@example.com", random_hex(8)))
        .expect("contract emails are valid")
}

fn url(text: &str) -> WebUrl {
    WebUrl::parse(text).expect("contract URLs are valid")
}

fn sealed(what: &str) -> Sealed {
    Sealed::from_stored(format!("sealed:{what}:{}", random_hex(8)))
}

fn profile() -> BusinessProfile {
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

fn merchant(status: MerchantStatus, created_at: Timestamp) -> Merchant {
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

fn member(
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

fn owner_of(merchant: &Merchant) -> MerchantUser {
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
async fn stored_merchant(
    stores: &MerchantStores,
    status: MerchantStatus,
    created_at: Timestamp,
) -> (Merchant, MerchantUser) {
    let merchant = merchant(status, created_at);
    let owner = owner_of(&merchant);
    stores.merchants.create(&merchant, &owner).await.unwrap();
    (merchant, owner)
}

fn document(merchant: &MerchantId, uploaded_at: Timestamp) -> Document {
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

fn new_key(environment: Environment, generated_at: Timestamp) -> NewKey {
    NewKey {
        environment,
        hash: random_hex(32),
        sealed: sealed(environment.as_str()),
        generated_at,
    }
}

fn record(key: &NewKey) -> KeyRecord {
    KeyRecord {
        sealed: key.sealed.clone(),
        generated_at: key.generated_at,
    }
}

/// An application as `create` takes it, with the hashes of its keys.
#[derive(Debug, Clone)]
struct NewApplication {
    application: Application,
    sandbox_hash: String,
    live_hash: Option<String>,
}

fn application(merchant: &MerchantId, live: bool, created_at: Timestamp) -> NewApplication {
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

async fn create_application(stores: &MerchantStores, new: &NewApplication) {
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
async fn stored_application(
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

fn code(purpose: CodePurpose, subject: &str, attempts_left: u32) -> OneTimeCode {
    OneTimeCode {
        purpose,
        subject: subject.to_owned(),
        code_hash: random_hex(32),
        expires_at: at(600_000),
        attempts_left,
        created_at: T0,
    }
}

fn is_conflict(result: &Result<(), RepositoryError>, tag: &str) -> bool {
    matches!(result, Err(RepositoryError::Conflict(t)) if *t == tag)
}

// ---------------------------------------------------------------------------------------------
// MerchantRepository

pub async fn merchants_come_back_as_created_with_their_owner(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    assert_eq!(
        stores.merchants.find(&merchant.id).await.unwrap(),
        Some(merchant.clone())
    );
    assert_eq!(
        stores.team.find(&owner.id).await.unwrap(),
        Some(owner.clone())
    );
    assert_eq!(
        stores.team.find_by_email(&owner.email).await.unwrap(),
        Some(owner)
    );
    let unknown = ids().next::<MerchantId>();
    assert_eq!(stores.merchants.find(&unknown).await.unwrap(), None);
}

pub async fn creating_a_merchant_with_a_taken_email_is_duplicate_and_stores_neither(
    stores: MerchantStores,
) {
    let (first, first_owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    // Any member counts, not only owners: an invited developer of the first merchant.
    let invited = member(&first.id, Role::Developer, UserStatus::Invited, at(1));
    stores.team.add(&invited).await.unwrap();
    for taken in [&first_owner.email, &invited.email] {
        let second = Merchant {
            email: taken.clone(),
            ..merchant(MerchantStatus::Onboarding, at(2))
        };
        let second_owner = owner_of(&second);
        let created = stores.merchants.create(&second, &second_owner).await;
        assert!(
            matches!(created, Err(RepositoryError::Duplicate)),
            "{created:?}"
        );
        assert_eq!(stores.merchants.find(&second.id).await.unwrap(), None);
        assert_eq!(stores.team.find(&second_owner.id).await.unwrap(), None);
    }
    assert_eq!(
        stores.team.find_by_email(&first_owner.email).await.unwrap(),
        Some(first_owner)
    );
}

pub async fn merchants_are_listed_newest_first_and_filtered_by_status(stores: MerchantStores) {
    let (oldest, _) = stored_merchant(&stores, MerchantStatus::Onboarding, at(0)).await;
    let (live, _) = stored_merchant(&stores, MerchantStatus::Live, at(1_000)).await;
    let (newest, _) = stored_merchant(&stores, MerchantStatus::Onboarding, at(2_000)).await;

    let all = stores
        .merchants
        .list(None, PageRequest::default())
        .await
        .unwrap();
    assert_eq!(all.total, 3);
    assert_eq!(
        all.items,
        vec![newest.clone(), live.clone(), oldest.clone()]
    );

    let onboarding = stores
        .merchants
        .list(Some(MerchantStatus::Onboarding), PageRequest::default())
        .await
        .unwrap();
    assert_eq!(onboarding.total, 2);
    assert_eq!(
        onboarding.items.iter().map(|m| &m.id).collect::<Vec<_>>(),
        vec![&newest.id, &oldest.id]
    );

    let second_page = PageRequest::new(Some(2), Some(2)).unwrap();
    let page = stores.merchants.list(None, second_page).await.unwrap();
    assert_eq!((page.total, page.request), (3, second_page));
    assert_eq!(page.items, vec![oldest]);

    let rejected = stores
        .merchants
        .list(Some(MerchantStatus::Rejected), PageRequest::default())
        .await
        .unwrap();
    assert_eq!((rejected.total, rejected.items), (0, vec![]));
}

pub async fn verifications_and_the_profile_are_saved(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    stores
        .merchants
        .mark_email_verified(&merchant.id, at(10))
        .await
        .unwrap();
    stores
        .merchants
        .mark_phone_verified(&merchant.id, at(20))
        .await
        .unwrap();
    let changed = BusinessProfile {
        registered_name: "Acme Payments Nigeria Ltd".into(),
        registration_number: "RC-7654321".into(),
        date_registered: CalendarDate::parse("2020-12-31").unwrap(),
        address: None,
        usecase: Some("Sign-in for merchants' customers".into()),
        description: None,
        identity_type: Some(IdentityType::NationalId),
        identity_number: Some("A12345678".into()),
        registry_status: RegistryStatus::Verified,
        registry_checked_at: Some(at(29)),
    };
    stores
        .merchants
        .save_profile(&merchant.id, &changed, at(30))
        .await
        .unwrap();
    let found = stores.merchants.find(&merchant.id).await.unwrap().unwrap();
    assert_eq!(found.email_verified_at, Some(at(10)));
    assert_eq!(found.phone_verified_at, Some(at(20)));
    assert_eq!(found.profile, changed);
    assert_eq!(
        (
            found.business_name,
            found.email,
            found.status,
            found.created_at
        ),
        (
            merchant.business_name,
            merchant.email,
            merchant.status,
            merchant.created_at
        )
    );
}

pub async fn transition_requires_a_listed_status_and_records_its_time(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let id = &merchant.id;

    let refused = stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::InReview],
            MerchantStatus::Live,
            at(50),
            None,
        )
        .await;
    assert!(
        is_conflict(&refused, conflicts::WRONG_STATUS),
        "{refused:?}"
    );
    assert_eq!(
        stores.merchants.find(id).await.unwrap(),
        Some(merchant.clone())
    );

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::Onboarding, MerchantStatus::Rejected],
            MerchantStatus::InReview,
            at(100),
            None,
        )
        .await
        .unwrap();
    let submitted = stores.merchants.find(id).await.unwrap().unwrap();
    assert_eq!(submitted.status, MerchantStatus::InReview);
    assert_eq!(submitted.submitted_at, Some(at(100)));

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::InReview],
            MerchantStatus::Rejected,
            at(200),
            Some("The registration certificate is unreadable"),
        )
        .await
        .unwrap();
    let rejected = stores.merchants.find(id).await.unwrap().unwrap();
    assert_eq!(rejected.status, MerchantStatus::Rejected);
    assert_eq!(rejected.decided_at, Some(at(200)));
    assert_eq!(
        rejected.rejection_reason.as_deref(),
        Some("The registration certificate is unreadable")
    );

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::Rejected],
            MerchantStatus::InReview,
            at(300),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        stores
            .merchants
            .find(id)
            .await
            .unwrap()
            .unwrap()
            .submitted_at,
        Some(at(300))
    );

    stores
        .merchants
        .transition(
            id,
            &[MerchantStatus::InReview],
            MerchantStatus::Live,
            at(400),
            None,
        )
        .await
        .unwrap();
    let live = stores.merchants.find(id).await.unwrap().unwrap();
    assert_eq!(live.status, MerchantStatus::Live);
    assert_eq!(live.decided_at, Some(at(400)));
    assert_eq!(live.rejection_reason, None);
}

pub async fn updates_of_an_unknown_merchant_are_not_found(stores: MerchantStores) {
    let unknown = ids().next::<MerchantId>();
    let not_found = |result: Result<(), RepositoryError>| {
        assert!(
            matches!(result, Err(RepositoryError::NotFound)),
            "{result:?}"
        );
    };
    not_found(stores.merchants.mark_email_verified(&unknown, T0).await);
    not_found(stores.merchants.mark_phone_verified(&unknown, T0).await);
    not_found(
        stores
            .merchants
            .save_profile(&unknown, &profile(), T0)
            .await,
    );
    not_found(
        stores
            .merchants
            .transition(
                &unknown,
                &[MerchantStatus::Onboarding],
                MerchantStatus::InReview,
                T0,
                None,
            )
            .await,
    );
    not_found(stores.merchants.approve(&unknown, &[], T0).await);
}

pub async fn documents_are_listed_oldest_first(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let (other, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let later = Document {
        document_type: DocumentType::RepresentativeId,
        format: DocumentFormat::Jpeg,
        file_name: "passport.jpg".into(),
        ..document(&merchant.id, at(2_000))
    };
    let earlier = document(&merchant.id, at(1_000));
    for d in [&later, &earlier, &document(&other.id, at(500))] {
        stores.merchants.add_document(d).await.unwrap();
    }
    assert_eq!(
        stores.merchants.list_documents(&merchant.id).await.unwrap(),
        vec![earlier, later]
    );
    let (empty, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    assert!(
        stores
            .merchants
            .list_documents(&empty.id)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn approval_makes_the_merchant_live_with_verified_documents_and_live_keys(
    stores: MerchantStores,
) {
    // Rejected once, then resubmitted: the old reason must not survive the approval.
    let merchant = Merchant {
        rejection_reason: Some("registration certificate unreadable".into()),
        ..merchant(MerchantStatus::InReview, T0)
    };
    stores
        .merchants
        .create(&merchant, &owner_of(&merchant))
        .await
        .unwrap();
    for offset in [10, 20] {
        stores
            .merchants
            .add_document(&document(&merchant.id, at(offset)))
            .await
            .unwrap();
    }
    let first = stored_application(&stores, &merchant, at(30)).await;
    let second = stored_application(&stores, &merchant, at(40)).await;
    let keys = vec![
        (
            first.application.id.clone(),
            new_key(Environment::Live, at(500)),
        ),
        (
            second.application.id.clone(),
            new_key(Environment::Live, at(500)),
        ),
    ];

    stores
        .merchants
        .approve(&merchant.id, &keys, at(500))
        .await
        .unwrap();

    let approved = stores.merchants.find(&merchant.id).await.unwrap().unwrap();
    assert_eq!(approved.rejection_reason, None);
    assert_eq!(approved.status, MerchantStatus::Live);
    assert_eq!(approved.decided_at, Some(at(500)));
    let documents = stores.merchants.list_documents(&merchant.id).await.unwrap();
    assert_eq!(documents.len(), 2);
    assert!(
        documents
            .iter()
            .all(|d| d.status == DocumentStatus::Verified)
    );
    for (new, (_, key)) in [&first, &second].into_iter().zip(&keys) {
        let expected = Application {
            live_key: Some(record(key)),
            ..new.application.clone()
        };
        assert_eq!(
            stores.applications.find(&expected.id).await.unwrap(),
            Some(expected.clone())
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&key.hash)
                .await
                .unwrap(),
            Some((expected.clone(), Environment::Live))
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&new.sandbox_hash)
                .await
                .unwrap(),
            Some((expected, Environment::Sandbox))
        );
    }

    // A merchant without applications needs no keys.
    let (bare, _) = stored_merchant(&stores, MerchantStatus::InReview, T0).await;
    stores
        .merchants
        .approve(&bare.id, &[], at(600))
        .await
        .unwrap();
    assert_eq!(
        stores
            .merchants
            .find(&bare.id)
            .await
            .unwrap()
            .unwrap()
            .status,
        MerchantStatus::Live
    );
}

pub async fn approval_needs_a_merchant_in_review(stores: MerchantStores) {
    for status in [
        MerchantStatus::Onboarding,
        MerchantStatus::Rejected,
        MerchantStatus::Live,
    ] {
        let (merchant, _) = stored_merchant(&stores, status, T0).await;
        let new = stored_application(&stores, &merchant, at(10)).await;
        let key = new_key(Environment::Live, at(100));
        let approved = stores
            .merchants
            .approve(
                &merchant.id,
                &[(new.application.id.clone(), key.clone())],
                at(100),
            )
            .await;
        assert!(
            is_conflict(&approved, conflicts::WRONG_STATUS),
            "{status:?}: {approved:?}"
        );
        assert_eq!(
            stores.merchants.find(&merchant.id).await.unwrap(),
            Some(merchant)
        );
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            Some(new.application)
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&key.hash)
                .await
                .unwrap(),
            None
        );
    }
}

pub async fn approval_leaving_an_application_without_a_live_key_changes_nothing(
    stores: MerchantStores,
) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::InReview, T0).await;
    let document = document(&merchant.id, at(10));
    stores.merchants.add_document(&document).await.unwrap();
    let keyed = stored_application(&stores, &merchant, at(20)).await;
    let forgotten = stored_application(&stores, &merchant, at(30)).await;
    let key = new_key(Environment::Live, at(100));

    let approved = stores
        .merchants
        .approve(
            &merchant.id,
            &[(keyed.application.id.clone(), key.clone())],
            at(100),
        )
        .await;

    assert!(
        is_conflict(&approved, conflicts::APPLICATIONS_CHANGED),
        "{approved:?}"
    );
    assert_eq!(
        stores.merchants.find(&merchant.id).await.unwrap(),
        Some(merchant.clone())
    );
    assert_eq!(
        stores.merchants.list_documents(&merchant.id).await.unwrap(),
        vec![document]
    );
    for new in [&keyed, &forgotten] {
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            Some(new.application.clone())
        );
    }
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&key.hash)
            .await
            .unwrap(),
        None
    );
}

/// `approve` and `ApplicationRepository::create` race: exactly one wins, and a live merchant
/// never has an application without a live key.
pub async fn approval_and_application_creation_never_interleave(stores: MerchantStores) {
    for round in 0..6 {
        let (merchant, _) = stored_merchant(&stores, MerchantStatus::InReview, at(round)).await;
        let existing = stored_application(&stores, &merchant, at(10)).await;
        let late = application(&merchant.id, false, at(20));
        let keys = [(
            existing.application.id.clone(),
            new_key(Environment::Live, at(100)),
        )];

        let (approved, created) = join(
            stores.merchants.approve(&merchant.id, &keys, at(100)),
            stores.applications.create(
                &late.application,
                &late.sandbox_hash,
                late.live_hash.as_deref(),
            ),
        )
        .await;

        match (&approved, &created) {
            (Ok(()), Err(RepositoryError::Conflict(conflicts::WRONG_STATUS))) => {}
            (Err(RepositoryError::Conflict(conflicts::APPLICATIONS_CHANGED)), Ok(())) => {}
            other => panic!("round {round}: exactly one must win, got {other:?}"),
        }
        let status = stores
            .merchants
            .find(&merchant.id)
            .await
            .unwrap()
            .unwrap()
            .status;
        let applications = stores
            .applications
            .list(&merchant.id, PageRequest::default())
            .await
            .unwrap()
            .items;
        let live = status == MerchantStatus::Live;
        assert_eq!(live, approved.is_ok());
        assert!(
            applications.iter().all(|a| a.live_key.is_some() == live),
            "round {round}: live = {live}, applications = {applications:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// TeamRepository

pub async fn members_come_back_and_emails_are_unique_across_merchants(stores: MerchantStores) {
    let (first, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let (second, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let invited = member(&first.id, Role::Admin, UserStatus::Invited, at(10));
    stores.team.add(&invited).await.unwrap();
    assert_eq!(
        stores.team.find(&invited.id).await.unwrap(),
        Some(invited.clone())
    );

    let same_email = MerchantUser {
        email: invited.email.clone(),
        ..member(&second.id, Role::Viewer, UserStatus::Invited, at(20))
    };
    let added = stores.team.add(&same_email).await;
    assert!(
        matches!(added, Err(RepositoryError::Duplicate)),
        "{added:?}"
    );
    assert_eq!(stores.team.find(&same_email.id).await.unwrap(), None);

    let same_id = MerchantUser {
        id: invited.id.clone(),
        ..member(&first.id, Role::Viewer, UserStatus::Invited, at(30))
    };
    let added = stores.team.add(&same_id).await;
    assert!(
        matches!(added, Err(RepositoryError::Duplicate)),
        "{added:?}"
    );
    assert_eq!(stores.team.find(&invited.id).await.unwrap(), Some(invited));
}

pub async fn finding_by_email_ignores_removed_members(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let admin = member(&merchant.id, Role::Admin, UserStatus::Active, at(10));
    stores.team.add(&admin).await.unwrap();
    assert_eq!(
        stores.team.find_by_email(&admin.email).await.unwrap(),
        Some(admin.clone())
    );
    stores
        .team
        .remove(&merchant.id, &admin.id, at(20))
        .await
        .unwrap();
    assert_eq!(stores.team.find_by_email(&admin.email).await.unwrap(), None);
    assert_eq!(
        stores
            .team
            .find_by_email(&unique_email("nobody"))
            .await
            .unwrap(),
        None
    );
}

pub async fn the_team_is_everyone_not_removed_oldest_first(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, at(0)).await;
    let (other, _) = stored_merchant(&stores, MerchantStatus::Onboarding, at(0)).await;
    let developer = member(
        &merchant.id,
        Role::Developer,
        UserStatus::Invited,
        at(3_000),
    );
    let viewer = member(&merchant.id, Role::Viewer, UserStatus::Active, at(1_000));
    let leaver = member(&merchant.id, Role::Admin, UserStatus::Active, at(2_000));
    let stranger = member(&other.id, Role::Admin, UserStatus::Active, at(500));
    for m in [&developer, &viewer, &leaver, &stranger] {
        stores.team.add(m).await.unwrap();
    }
    stores
        .team
        .remove(&merchant.id, &leaver.id, at(4_000))
        .await
        .unwrap();
    assert_eq!(
        stores.team.list(&merchant.id).await.unwrap(),
        vec![owner, viewer, developer]
    );
}

pub async fn activation_sets_the_password_of_an_invited_member(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let invited = member(&merchant.id, Role::Developer, UserStatus::Invited, at(10));
    stores.team.add(&invited).await.unwrap();

    stores
        .team
        .activate(&invited.id, "$argon2id$new", at(20))
        .await
        .unwrap();
    let active = stores.team.find(&invited.id).await.unwrap().unwrap();
    assert_eq!(active.status, UserStatus::Active);
    assert_eq!(active.password_hash.as_deref(), Some("$argon2id$new"));

    for not_invited in [&invited.id, &owner.id] {
        let again = stores
            .team
            .activate(not_invited, "$argon2id$other", at(30))
            .await;
        assert!(is_conflict(&again, conflicts::NOT_INVITED), "{again:?}");
    }
    assert_eq!(
        stores
            .team
            .find(&invited.id)
            .await
            .unwrap()
            .unwrap()
            .password_hash
            .as_deref(),
        Some("$argon2id$new")
    );
    let unknown = stores
        .team
        .activate(&ids().next::<MerchantUserId>(), "$argon2id$x", at(40))
        .await;
    assert!(
        matches!(unknown, Err(RepositoryError::NotFound))
            || is_conflict(&unknown, conflicts::NOT_INVITED),
        "{unknown:?}"
    );
}

pub async fn removal_marks_members_removed_but_keeps_the_last_owner(stores: MerchantStores) {
    let (merchant, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let admin = member(&merchant.id, Role::Admin, UserStatus::Active, at(10));
    stores.team.add(&admin).await.unwrap();

    stores
        .team
        .remove(&merchant.id, &admin.id, at(20))
        .await
        .unwrap();
    assert_eq!(
        stores.team.find(&admin.id).await.unwrap().unwrap().status,
        UserStatus::Removed
    );

    let last = stores.team.remove(&merchant.id, &owner.id, at(30)).await;
    assert!(is_conflict(&last, conflicts::LAST_OWNER), "{last:?}");
    assert_eq!(
        stores.team.find(&owner.id).await.unwrap(),
        Some(owner.clone())
    );

    let second_owner = member(&merchant.id, Role::Owner, UserStatus::Active, at(40));
    stores.team.add(&second_owner).await.unwrap();
    stores
        .team
        .remove(&merchant.id, &owner.id, at(50))
        .await
        .unwrap();
    let last = stores
        .team
        .remove(&merchant.id, &second_owner.id, at(60))
        .await;
    assert!(is_conflict(&last, conflicts::LAST_OWNER), "{last:?}");
    assert_eq!(
        stores.team.list(&merchant.id).await.unwrap(),
        vec![second_owner]
    );
}

pub async fn removing_a_member_of_another_merchant_is_not_found(stores: MerchantStores) {
    let (mine, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let (theirs, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let their_admin = member(&theirs.id, Role::Admin, UserStatus::Active, at(10));
    stores.team.add(&their_admin).await.unwrap();

    let removed = stores.team.remove(&mine.id, &their_admin.id, at(20)).await;
    assert!(
        matches!(removed, Err(RepositoryError::NotFound)),
        "{removed:?}"
    );
    assert_eq!(
        stores.team.find(&their_admin.id).await.unwrap(),
        Some(their_admin)
    );
    let unknown = stores
        .team
        .remove(&mine.id, &ids().next::<MerchantUserId>(), at(30))
        .await;
    assert!(
        matches!(unknown, Err(RepositoryError::NotFound)),
        "{unknown:?}"
    );
}

pub async fn concurrent_removals_never_remove_the_last_owner(stores: MerchantStores) {
    for round in 0..4 {
        let (merchant, first) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
        let mut owners = vec![first];
        for i in 0..2 {
            let owner = member(&merchant.id, Role::Owner, UserStatus::Active, at(i + 1));
            stores.team.add(&owner).await.unwrap();
            owners.push(owner);
        }
        let removals = owners.iter().map(|owner| {
            let team = stores.team.clone();
            let merchant = merchant.id.clone();
            let owner = owner.id.clone();
            async move { team.remove(&merchant, &owner, at(100)).await }
        });
        let results = join_all(removals).await;
        let removed = results.iter().filter(|r| r.is_ok()).count();
        let refused = results
            .iter()
            .filter(|r| is_conflict(r, conflicts::LAST_OWNER))
            .count();
        assert_eq!((removed, refused), (2, 1), "round {round}: {results:?}");
        let remaining = stores.team.list(&merchant.id).await.unwrap();
        assert_eq!(remaining.len(), 1, "round {round}");
        assert_eq!(
            (remaining[0].role, remaining[0].status),
            (Role::Owner, UserStatus::Active)
        );
    }
}

const LOGIN_POLICY: LoginPolicy = LoginPolicy {
    max_attempts: 3,
    lockout: std::time::Duration::from_secs(900),
};

async fn take_login(stores: &MerchantStores, id: &MerchantUserId, now: Timestamp) -> bool {
    match stores
        .team
        .take_login_attempt(id, LOGIN_POLICY, now)
        .await
        .unwrap()
    {
        LoginAdmission::Admitted { .. } => true,
        LoginAdmission::Refused { until } => {
            assert!(until > now, "refused until {until:?} at {now:?}");
            false
        }
    }
}

pub async fn login_attempts_are_taken_locked_and_cleared(stores: MerchantStores) {
    let (_, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    for taken in 1..=3 {
        assert!(take_login(&stores, &owner.id, at(taken)).await);
    }
    let locked = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!(
        (locked.failed_logins, locked.locked_until),
        (3, Some(at(3 + 900_000)))
    );
    // Refused while locked, and the refusal changes nothing.
    assert!(!take_login(&stores, &owner.id, at(10)).await);
    let still = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!(
        (still.failed_logins, still.locked_until),
        (3, locked.locked_until)
    );
    // After the lock-out a fresh count starts.
    assert!(take_login(&stores, &owner.id, at(3 + 900_000)).await);
    let fresh = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!((fresh.failed_logins, fresh.locked_until), (1, None));

    stores.team.clear_failed_logins(&owner.id).await.unwrap();
    let cleared = stores.team.find(&owner.id).await.unwrap().unwrap();
    assert_eq!((cleared.failed_logins, cleared.locked_until), (0, None));
}

pub async fn concurrent_login_attempts_get_no_more_tries_than_sequential_ones(
    stores: MerchantStores,
) {
    let (_, owner) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let attempts = (0..20).map(|_| {
        let stores = stores.clone();
        let id = owner.id.clone();
        async move { take_login(&stores, &id, at(1)).await }
    });
    let admitted = join_all(attempts).await;
    assert_eq!(
        admitted.iter().filter(|admitted| **admitted).count(),
        LOGIN_POLICY.max_attempts as usize,
        "{admitted:?}"
    );
}

pub async fn a_login_attempt_for_an_unknown_member_is_not_found(stores: MerchantStores) {
    let unknown = ids().next::<MerchantUserId>();
    let result = stores
        .team
        .take_login_attempt(&unknown, LOGIN_POLICY, T0)
        .await;
    assert!(
        matches!(result, Err(RepositoryError::NotFound)),
        "{result:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// CodeRepository

pub async fn put_replaces_the_code_of_the_same_purpose_and_subject(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let first = code(CodePurpose::EmailVerification, &subject, 1);
    stores.codes.put(&first).await.unwrap();
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap(),
        Some(first.clone())
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &first.code_hash)
            .await
            .unwrap(),
        Some(first.clone())
    );

    let second = OneTimeCode {
        expires_at: at(1_200_000),
        attempts_left: 5,
        created_at: at(60_000),
        ..code(CodePurpose::EmailVerification, &subject, 5)
    };
    stores.codes.put(&second).await.unwrap();
    let phone = code(CodePurpose::PhoneVerification, &subject, 5);
    stores.codes.put(&phone).await.unwrap();

    assert_eq!(
        stores
            .codes
            .find(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap(),
        Some(second.clone())
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &first.code_hash)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &second.code_hash)
            .await
            .unwrap(),
        Some(second.clone())
    );
    // Purposes are separate: the phone code did not replace the email link, and a hash is
    // looked up within its purpose.
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::PhoneVerification, &subject)
            .await
            .unwrap(),
        Some(phone)
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::Invitation, &second.code_hash)
            .await
            .unwrap(),
        None
    );
}

pub async fn codes_are_found_whatever_their_expiry(stores: MerchantStores) {
    let subject = ids().next::<MerchantUserId>().into_string();
    let expired = OneTimeCode {
        expires_at: at(-86_400_000),
        created_at: at(-90_000_000),
        ..code(CodePurpose::Invitation, &subject, 1)
    };
    stores.codes.put(&expired).await.unwrap();
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::Invitation, &subject)
            .await
            .unwrap(),
        Some(expired.clone())
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::Invitation, &expired.code_hash)
            .await
            .unwrap(),
        Some(expired)
    );
}

async fn attempts_left(stores: &MerchantStores, subject: &str) -> u32 {
    stores
        .codes
        .find(CodePurpose::PhoneVerification, subject)
        .await
        .unwrap()
        .map_or(0, |code| code.attempts_left)
}

pub async fn taking_attempts_counts_down_to_zero_and_not_below(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let stored = code(CodePurpose::PhoneVerification, &subject, 2);
    stores.codes.put(&stored).await.unwrap();
    for expected in [Some(1), Some(0), None] {
        let taken = stores
            .codes
            .take_attempt(CodePurpose::PhoneVerification, &subject, T0)
            .await
            .unwrap();
        assert_eq!(taken.as_ref().map(|code| code.attempts_left), expected);
        if let Some(taken) = taken {
            assert_eq!(taken.code_hash, stored.code_hash);
        }
    }
    assert_eq!(attempts_left(&stores, &subject).await, 0);
    // No code, and an expired code, give no attempt.
    let missing = stores
        .codes
        .take_attempt(CodePurpose::EmailVerification, &subject, T0)
        .await
        .unwrap();
    assert_eq!(missing, None);
    let other = ids().next::<MerchantId>().into_string();
    stores
        .codes
        .put(&code(CodePurpose::PhoneVerification, &other, 5))
        .await
        .unwrap();
    let expired = stores
        .codes
        .take_attempt(CodePurpose::PhoneVerification, &other, at(600_000))
        .await
        .unwrap();
    assert_eq!(expired, None);
    assert_eq!(attempts_left(&stores, &other).await, 5);
}

pub async fn concurrent_attempts_take_no_more_than_are_left(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    stores
        .codes
        .put(&code(CodePurpose::PhoneVerification, &subject, 5))
        .await
        .unwrap();
    let takers = (0..20).map(|_| {
        let codes = stores.codes.clone();
        let subject = subject.clone();
        async move {
            codes
                .take_attempt(CodePurpose::PhoneVerification, &subject, T0)
                .await
                .unwrap()
                .is_some()
        }
    });
    let taken = join_all(takers).await;
    assert_eq!(taken.iter().filter(|taken| **taken).count(), 5, "{taken:?}");
    assert_eq!(attempts_left(&stores, &subject).await, 0);
}

pub async fn a_replacement_waits_for_the_cutoff(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let first = code(CodePurpose::PhoneVerification, &subject, 5);
    // No code yet: stored whatever the cutoff.
    assert!(
        stores
            .codes
            .put_unless_newer(&first, at(-1_000_000))
            .await
            .unwrap()
    );
    let second = OneTimeCode {
        created_at: at(30_000),
        ..code(CodePurpose::PhoneVerification, &subject, 5)
    };
    // The first code (created at T0) is newer than the cutoff: refused, nothing changes.
    assert!(
        !stores
            .codes
            .put_unless_newer(&second, at(-1))
            .await
            .unwrap()
    );
    let current = stores.codes.find(CodePurpose::PhoneVerification, &subject);
    assert_eq!(current.await.unwrap(), Some(first));
    // At the cutoff it is old enough.
    assert!(stores.codes.put_unless_newer(&second, T0).await.unwrap());
    let current = stores.codes.find(CodePurpose::PhoneVerification, &subject);
    assert_eq!(current.await.unwrap(), Some(second));
}

pub async fn of_concurrent_replacements_exactly_one_stores(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    stores
        .codes
        .put(&code(CodePurpose::PhoneVerification, &subject, 5))
        .await
        .unwrap();
    // Twenty resends a minute later, each allowed to replace a code from T0 or before.
    let resends = (0..20).map(|_| {
        let codes = stores.codes.clone();
        let replacement = OneTimeCode {
            created_at: at(60_000),
            ..code(CodePurpose::PhoneVerification, &subject, 5)
        };
        async move { codes.put_unless_newer(&replacement, T0).await.unwrap() }
    });
    let stored = join_all(resends).await;
    assert_eq!(
        stored.iter().filter(|stored| **stored).count(),
        1,
        "{stored:?}"
    );
}

pub async fn consuming_deletes_the_code_once(stores: MerchantStores) {
    let subject = ids().next::<MerchantId>().into_string();
    let code = code(CodePurpose::EmailVerification, &subject, 1);
    stores.codes.put(&code).await.unwrap();
    assert!(
        stores
            .codes
            .consume(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap()
    );
    assert_eq!(
        stores
            .codes
            .find(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &code.code_hash)
            .await
            .unwrap(),
        None
    );
    assert!(
        !stores
            .codes
            .consume(CodePurpose::EmailVerification, &subject)
            .await
            .unwrap()
    );
}

pub async fn of_concurrent_consumers_exactly_one_wins(stores: MerchantStores) {
    for round in 0..3 {
        let subject = ids().next::<MerchantId>().into_string();
        stores
            .codes
            .put(&code(CodePurpose::PhoneVerification, &subject, 5))
            .await
            .unwrap();
        let consumers = (0..6).map(|_| {
            let codes = stores.codes.clone();
            let subject = subject.clone();
            async move {
                codes
                    .consume(CodePurpose::PhoneVerification, &subject)
                    .await
                    .unwrap()
            }
        });
        let won = join_all(consumers).await;
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: {won:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// ApplicationRepository

pub async fn applications_come_back_with_their_current_keys(stores: MerchantStores) {
    let (onboarding, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let sandbox_only = stored_application(&stores, &onboarding, at(10)).await;
    assert_eq!(sandbox_only.application.live_key, None);
    assert_eq!(
        stores
            .applications
            .find(&sandbox_only.application.id)
            .await
            .unwrap(),
        Some(sandbox_only.application.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&sandbox_only.sandbox_hash)
            .await
            .unwrap(),
        Some((sandbox_only.application.clone(), Environment::Sandbox))
    );

    let (live, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let both = stored_application(&stores, &live, at(20)).await;
    assert!(both.application.live_key.is_some());
    assert_eq!(
        stores
            .applications
            .find(&both.application.id)
            .await
            .unwrap(),
        Some(both.application.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(both.live_hash.as_deref().unwrap())
            .await
            .unwrap(),
        Some((both.application.clone(), Environment::Live))
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&both.sandbox_hash)
            .await
            .unwrap(),
        Some((both.application.clone(), Environment::Sandbox))
    );

    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&random_hex(32))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .applications
            .find(&ids().next::<ApplicationId>())
            .await
            .unwrap(),
        None
    );
}

pub async fn client_ids_and_key_hashes_are_unique(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let first = stored_application(&stores, &merchant, at(10)).await;
    let first_live_hash = first.live_hash.clone().unwrap();

    let same_client_id = {
        let mut new = application(&merchant.id, true, at(20));
        new.application.client_id = first.application.client_id.clone();
        new
    };
    let same_id = {
        let mut new = application(&merchant.id, true, at(20));
        new.application.id = first.application.id.clone();
        new
    };
    let sandbox_hash_taken = NewApplication {
        sandbox_hash: first_live_hash.clone(),
        ..application(&merchant.id, true, at(20))
    };
    let live_hash_taken = NewApplication {
        live_hash: Some(first.sandbox_hash.clone()),
        ..application(&merchant.id, true, at(20))
    };
    for (what, new) in [
        ("client id", &same_client_id),
        ("sandbox key hash", &sandbox_hash_taken),
        ("live key hash", &live_hash_taken),
    ] {
        let created = stores
            .applications
            .create(
                &new.application,
                &new.sandbox_hash,
                new.live_hash.as_deref(),
            )
            .await;
        assert!(
            matches!(created, Err(RepositoryError::Duplicate)),
            "{what}: {created:?}"
        );
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            None,
            "{what}"
        );
    }
    let created = stores
        .applications
        .create(
            &same_id.application,
            &same_id.sandbox_hash,
            same_id.live_hash.as_deref(),
        )
        .await;
    assert!(
        matches!(created, Err(RepositoryError::Duplicate)),
        "{created:?}"
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&first_live_hash)
            .await
            .unwrap(),
        Some((first.application.clone(), Environment::Live))
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&same_id.sandbox_hash)
            .await
            .unwrap(),
        None
    );
}

pub async fn applications_carry_a_live_key_exactly_when_the_merchant_is_live(
    stores: MerchantStores,
) {
    for (status, live_key) in [
        (MerchantStatus::Onboarding, true),
        (MerchantStatus::InReview, true),
        (MerchantStatus::Rejected, true),
        (MerchantStatus::Live, false),
    ] {
        let (merchant, _) = stored_merchant(&stores, status, T0).await;
        let new = application(&merchant.id, live_key, at(10));
        let created = stores
            .applications
            .create(
                &new.application,
                &new.sandbox_hash,
                new.live_hash.as_deref(),
            )
            .await;
        assert!(
            is_conflict(&created, conflicts::WRONG_STATUS),
            "{status:?}, live key {live_key}: {created:?}"
        );
        assert_eq!(
            stores.applications.find(&new.application.id).await.unwrap(),
            None
        );
        assert_eq!(
            stores
                .applications
                .find_by_key_hash(&new.sandbox_hash)
                .await
                .unwrap(),
            None
        );
    }
}

pub async fn applications_are_listed_oldest_first_and_paged(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let (other, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let middle = stored_application(&stores, &merchant, at(2_000)).await;
    let oldest = stored_application(&stores, &merchant, at(1_000)).await;
    let newest = stored_application(&stores, &merchant, at(3_000)).await;
    stored_application(&stores, &other, at(500)).await;

    let first_page = PageRequest::new(Some(1), Some(2)).unwrap();
    let page = stores
        .applications
        .list(&merchant.id, first_page)
        .await
        .unwrap();
    assert_eq!((page.total, page.request), (3, first_page));
    assert_eq!(page.items, vec![oldest.application, middle.application]);

    let second_page = PageRequest::new(Some(2), Some(2)).unwrap();
    let page = stores
        .applications
        .list(&merchant.id, second_page)
        .await
        .unwrap();
    assert_eq!(page.total, 3);
    assert_eq!(page.items, vec![newest.application]);

    let (empty, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let page = stores
        .applications
        .list(&empty.id, PageRequest::default())
        .await
        .unwrap();
    assert_eq!((page.total, page.items), (0, vec![]));
}

pub async fn update_saves_the_editable_fields_only(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let original = new.application;

    let mut edited = original.clone();
    edited.name = "Mobile app".into();
    edited.callback_url = url("https://api.shop.example/hooks/idconsent");
    edited.redirect_uris = vec![url("https://m.shop.example/done")];
    edited.request_types = RequestTypes::all();
    edited.updated_at = at(100);
    // Not editable through `update`.
    let mut sent = edited.clone();
    sent.secret = sealed("other-secret");
    sent.webhook_secret = sealed("other-webhook");
    sent.created_at = at(99);
    sent.live_key = Some(KeyRecord {
        sealed: sealed("live"),
        generated_at: at(99),
    });

    stores.applications.update(&sent).await.unwrap();
    assert_eq!(
        stores.applications.find(&original.id).await.unwrap(),
        Some(edited)
    );
}

pub async fn rotating_a_key_replaces_it_and_the_old_hash_stops_matching(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Live, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let mut expected = new.application.clone();

    let sandbox = new_key(Environment::Sandbox, at(100));
    stores
        .applications
        .rotate_key(&expected.id, &sandbox)
        .await
        .unwrap();
    expected.sandbox_key = record(&sandbox);
    assert_eq!(
        stores.applications.find(&expected.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&new.sandbox_hash)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&sandbox.hash)
            .await
            .unwrap(),
        Some((expected.clone(), Environment::Sandbox))
    );

    let live = new_key(Environment::Live, at(200));
    stores
        .applications
        .rotate_key(&expected.id, &live)
        .await
        .unwrap();
    expected.live_key = Some(record(&live));
    assert_eq!(
        stores.applications.find(&expected.id).await.unwrap(),
        Some(expected.clone())
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(new.live_hash.as_deref().unwrap())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&live.hash)
            .await
            .unwrap(),
        Some((expected.clone(), Environment::Live))
    );
    // The other environment's key is untouched.
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&sandbox.hash)
            .await
            .unwrap(),
        Some((expected, Environment::Sandbox))
    );
}

pub async fn rotating_live_without_a_live_key_is_a_conflict(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let live = new_key(Environment::Live, at(100));
    let rotated = stores
        .applications
        .rotate_key(&new.application.id, &live)
        .await;
    assert!(
        is_conflict(&rotated, conflicts::NO_LIVE_CREDENTIALS),
        "{rotated:?}"
    );
    assert_eq!(
        stores.applications.find(&new.application.id).await.unwrap(),
        Some(new.application)
    );
    assert_eq!(
        stores
            .applications
            .find_by_key_hash(&live.hash)
            .await
            .unwrap(),
        None
    );
}

pub async fn rotating_the_webhook_secret_keeps_the_previous_one_signing(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let original = new.application;

    let first = sealed("webhook-1");
    stores
        .applications
        .rotate_webhook_secret(&original.id, &first, at(86_400_100), at(100))
        .await
        .unwrap();
    let rotated = stores
        .applications
        .find(&original.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rotated.webhook_secret, first);
    assert_eq!(
        rotated.previous_webhook_secret,
        Some(RetiringSecret {
            sealed: original.webhook_secret.clone(),
            expires_at: at(86_400_100),
        })
    );
    assert_eq!(rotated.secret, original.secret);

    let second = sealed("webhook-2");
    stores
        .applications
        .rotate_webhook_secret(&original.id, &second, at(86_400_200), at(200))
        .await
        .unwrap();
    let again = stores
        .applications
        .find(&original.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.webhook_secret, second);
    assert_eq!(
        again.previous_webhook_secret,
        Some(RetiringSecret {
            sealed: first,
            expires_at: at(86_400_200),
        })
    );
}

pub async fn rotating_the_request_secret_keeps_the_previous_one_verifying(stores: MerchantStores) {
    let (merchant, _) = stored_merchant(&stores, MerchantStatus::Onboarding, T0).await;
    let new = stored_application(&stores, &merchant, at(10)).await;
    let original = new.application;
    assert_eq!(original.previous_secret, None);

    let first = sealed("sk-1");
    stores
        .applications
        .rotate_secret(&original.id, &first, at(86_400_100), at(100))
        .await
        .unwrap();
    let rotated = stores
        .applications
        .find(&original.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rotated.secret, first);
    assert_eq!(
        rotated.previous_secret,
        Some(RetiringSecret {
            sealed: original.secret.clone(),
            expires_at: at(86_400_100),
        })
    );
    assert_eq!(rotated.webhook_secret, original.webhook_secret);
    assert_eq!(
        rotated.request_secrets(at(86_400_099)),
        [&first, &original.secret]
    );
    assert_eq!(rotated.request_secrets(at(86_400_100)), [&first]);
    // The key lookup of signed requests sees the same secrets.
    let by_key = stores
        .applications
        .find_by_key_hash(&new.sandbox_hash)
        .await
        .unwrap()
        .unwrap()
        .0;
    assert_eq!(by_key.previous_secret, rotated.previous_secret);

    let unknown = stores
        .applications
        .rotate_secret(&ids().next(), &sealed("sk-2"), at(1), at(1))
        .await;
    assert!(
        matches!(unknown, Err(RepositoryError::NotFound)),
        "{unknown:?}"
    );
}
