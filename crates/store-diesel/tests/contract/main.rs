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

/// Runs a port's contract suite on SQLite and on PostgreSQL: `factory: Type = make` declares the
/// `async fn factory() -> Option<Type>` the suite calls, where `make(database)` builds the adapter
/// on a fresh database (`None` on PostgreSQL without `IDC_TEST_DATABASE_URL`, required under CI).
macro_rules! contract_on_both_backends {
    ($($contract:ident)::+, $factory:ident: $made:ty = $make:ident) => {
        mod sqlite {
            use super::*;

            async fn $factory() -> Option<$made> {
                Some($make(idconsent_store_diesel::testing::TestDatabase::sqlite()))
            }

            $($contract)::+!($factory);
        }

        mod postgres {
            use super::*;

            async fn $factory() -> Option<$made> {
                idconsent_store_diesel::testing::TestDatabase::postgres().map($make)
            }

            $($contract)::+!($factory);
        }
    };
}

mod access;
mod billing;
mod blobs;
mod chip_challenges;
mod consent;
mod enduser;
mod hosted;
mod mandate;
mod merchant;
mod migrations;
mod notification;
mod oauth;
mod oidc;
mod qrcode;
mod reseal;
mod signature;
mod throttle;
mod verification;
mod webhook;
