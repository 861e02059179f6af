//! The [`BusinessRegistry`] contract: what the onboarding rules rely on from any registry.
//!
//! A harness names a company the registry knows and a number it does not know; the cases check
//! the three answers. Registries that cannot report a mismatch (the sandbox knows every number
//! under any name) say so with `can_mismatch() == false`.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;

use crate::ports::{BusinessRegistry, RegistryAnswer, RegistryQuery};

#[async_trait]
pub trait RegistryHarness: Send + Sync {
    async fn registry(&self) -> Arc<dyn BusinessRegistry>;
    /// A company the registry knows, exactly as registered.
    fn known(&self) -> RegistryQuery;
    /// A registration number the registry does not know.
    fn unknown_number(&self) -> String;
    fn can_mismatch(&self) -> bool;
}

#[macro_export]
macro_rules! business_registry_contract {
    ($harness:expr) => {
        $crate::business_registry_contract!(@cases $harness;
            a_known_company_matches,
            an_unknown_number_is_not_found,
            a_known_number_under_another_name_is_a_mismatch,
        );
    };
    (@cases $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $case() {
                $crate::registry_contract::$case(&$harness).await;
            }
        )*
    };
}

pub async fn a_known_company_matches(harness: &dyn RegistryHarness) {
    let registry = harness.registry().await;
    assert_eq!(
        registry.check(&harness.known()).await.unwrap(),
        RegistryAnswer::Matched
    );
}

pub async fn an_unknown_number_is_not_found(harness: &dyn RegistryHarness) {
    let registry = harness.registry().await;
    let query = RegistryQuery {
        registration_number: harness.unknown_number(),
        ..harness.known()
    };
    assert_eq!(
        registry.check(&query).await.unwrap(),
        RegistryAnswer::NotFound
    );
}

pub async fn a_known_number_under_another_name_is_a_mismatch(harness: &dyn RegistryHarness) {
    if !harness.can_mismatch() {
        return;
    }
    let registry = harness.registry().await;
    let query = RegistryQuery {
        registered_name: "Some Other Company Ltd".into(),
        ..harness.known()
    };
    assert_eq!(
        registry.check(&query).await.unwrap(),
        RegistryAnswer::Mismatch
    );
}
