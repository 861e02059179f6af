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
//!
//! The cases live in one file per port (`merchants`, `team`, `codes`, `applications`) and are
//! re-exported here, where the macro finds them; `fixtures` builds what they store.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::ports::{ApplicationRepository, CodeRepository, MerchantRepository, TeamRepository};

mod applications;
mod codes;
mod fixtures;
mod merchants;
mod team;

pub use applications::*;
pub use codes::*;
pub use merchants::*;
pub use team::*;

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
            concurrent_key_lookups_each_find_their_own,
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
