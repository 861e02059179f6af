//! Port contract suites and schema checks, on SQLite always and PostgreSQL when configured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Runs `case(database)` on a fresh SQLite database and on a fresh PostgreSQL schema (skipped
/// locally without `IDC_TEST_DATABASE_URL`, required under CI): `case::sqlite`, `case::postgres`.
macro_rules! on_both_backends {
    ($($case:ident),+ $(,)?) => {
        $(
            mod $case {
                use idconsent_store_diesel::testing::TestDatabase;

                #[tokio::test]
                async fn sqlite() {
                    super::$case(TestDatabase::sqlite()).await;
                }

                #[tokio::test]
                async fn postgres() {
                    if let Some(database) = TestDatabase::postgres() {
                        super::$case(database).await;
                    }
                }
            }
        )+
    };
}

mod access;
mod billing;
mod consent;
mod enduser;
mod hosted;
mod mandate;
mod merchant;
mod migrations;
mod notification;
mod oauth;
mod qrcode;
mod reseal;
mod signature;
mod throttle;
mod verification;
mod webhook;
