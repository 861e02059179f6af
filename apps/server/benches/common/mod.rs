//! Setup shared by the server's benches: the real wiring on a SQLite file in a temporary
//! directory, and a registered merchant with one application.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use idconsent_merchant::{ApplicationInput, CreatedApplication, RegisterRequest};
use idconsent_server::Config;
use idconsent_server::wiring::Deployment;
use idconsent_store_diesel::Db;
use secrecy::ExposeSecret;

/// `Deployment::build` on a migrated SQLite file, with a multi-threaded runtime to drive it.
pub struct Wired {
    pub runtime: tokio::runtime::Runtime,
    pub context: Deployment,
    pub db: Db,
    /// Kept so the database outlives the bench.
    pub dir: tempfile::TempDir,
}

pub fn wired() -> Wired {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let mut config = Config::for_tests(PathBuf::from(dir.path()), url);
    // The bench binary's `main` is criterion's: the PDF parser children are the real binary.
    config.untrusted.worker = PathBuf::from(env!("CARGO_BIN_EXE_idconsent"));
    let db = Db::open(config.database_url.expose_secret(), &config.db).unwrap();
    db.migrate().unwrap();
    let context = runtime
        .block_on(idconsent_server::wiring::build(config, db.clone()))
        .unwrap();
    Wired {
        runtime,
        context,
        db,
        dir,
    }
}

/// The clock the wiring uses (the system clock: benches set no other).
pub fn clock() -> std::sync::Arc<dyn idconsent_kernel::Clock> {
    std::sync::Arc::new(idconsent_kernel::SystemClock)
}

/// Fresh ids, as the wiring mints them.
pub fn ids() -> std::sync::Arc<dyn idconsent_kernel::IdGenerator> {
    std::sync::Arc::new(idconsent_kernel::UlidGenerator::new(
        clock(),
        std::sync::Arc::new(idconsent_kernel::OsRandom),
    ))
}

/// Registers "Bench Shop" and creates one application calling `callback_url`.
pub async fn merchant_application(
    context: &Deployment,
    callback_url: &str,
    redirect_uris: Option<Vec<String>>,
) -> CreatedApplication {
    let registered = context
        .services
        .merchants
        .register(RegisterRequest {
            business_name: "Bench Shop".into(),
            contact_name: "Bench".into(),
            email: "bench@shop.example".into(),
            password: "correct horse battery staple".into(),
            entity_type: "llc".into(),
            registration_number: "HRB-1".into(),
            date_registered: "2019-03-04".into(),
            industry: "retail".into(),
            phone: "+15551234567".into(),
        })
        .await
        .unwrap();
    let actor = context
        .services
        .merchants
        .authenticate(&registered.session.token)
        .await
        .unwrap();
    context
        .services
        .merchants
        .create_application(
            &actor,
            ApplicationInput {
                name: Some("Bench".into()),
                callback_url: Some(callback_url.into()),
                redirect_uris,
                request_types: None,
            },
        )
        .await
        .unwrap()
}
