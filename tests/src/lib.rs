//! Test harness: [`TestApp`] starts the real service on a free port with a fresh database and
//! talks to it over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use idconsent_kernel::ShiftedClock;

pub mod browser;
pub mod enduser;
pub mod hosted;
pub mod identity;
pub mod nginx;
pub mod pdf;
pub mod proxy;
pub mod receiver;
pub mod scenario;

pub use idconsent_store_diesel::Backend;
use idconsent_store_diesel::testing::TestDatabase;
use reqwest::{Method, Response};
use serde_json::Value;

/// A running service with its own database and data directory.
#[allow(missing_debug_implementations)]
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub backend: Backend,
    /// The service's clock: the system clock until a test moves it on ([`TestApp::advance`]).
    pub clock: Arc<ShiftedClock>,
    /// The last `X-Timestamp` this app's requests were signed with (see `scenario::signed`).
    last_signed: AtomicI64,
    server: Option<idconsent_server::RunningServer>,
    _database: TestDatabase,
    _data_dir: tempfile::TempDir,
}

impl TestApp {
    /// Starts the service on `backend`, or `None` when that backend is skipped here.
    pub async fn start(backend: Backend) -> Option<Self> {
        Self::start_with(backend, |_| {}).await
    }

    /// Like [`TestApp::start`], with a chance to adjust the configuration.
    pub async fn start_with(
        backend: Backend,
        adjust: impl FnOnce(&mut idconsent_server::Config),
    ) -> Option<Self> {
        Self::start_routed(backend, str::to_owned, adjust).await
    }

    /// Like [`TestApp::start_with`], the service reaching its database at `route(url)` (through
    /// a [`proxy::TcpProxy`], say) while the test keeps the direct URL.
    pub async fn start_routed(
        backend: Backend,
        route: impl FnOnce(&str) -> String,
        adjust: impl FnOnce(&mut idconsent_server::Config),
    ) -> Option<Self> {
        // IDC_TEST_LOG=debug shows the servers' logs (all tests of the binary share them).
        if let Ok(filter) = std::env::var("IDC_TEST_LOG") {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_test_writer()
                .try_init();
        }
        let database = TestDatabase::of(backend)?;
        let data_dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ShiftedClock::new());
        let mut config = idconsent_server::Config::for_tests(
            PathBuf::from(data_dir.path()),
            route(&database.url),
        );
        config.clock = Some(clock.clone());
        config.identity.models_dir = identity::models_dir();
        config.untrusted.worker = untrusted_worker();
        adjust(&mut config);
        let server = idconsent_server::start(config).await.unwrap();
        Some(Self {
            base: server.url(),
            client: reqwest::Client::builder().build().unwrap(),
            backend,
            clock,
            last_signed: AtomicI64::new(0),
            server: Some(server),
            _database: database,
            _data_dir: data_dir,
        })
    }

    /// The service's data directory (generated keys, blobs).
    pub fn data_dir(&self) -> &std::path::Path {
        self._data_dir.path()
    }

    /// Moves the service's clock forward: expiry, retention and schedules happen as if `by`
    /// had passed (background workers notice at their next poll, within 100 ms).
    pub fn advance(&self, by: std::time::Duration) {
        self.clock.advance(by);
    }

    /// The service's time, in milliseconds since the epoch.
    pub fn now_millis(&self) -> i64 {
        idconsent_kernel::Clock::now(self.clock.as_ref()).as_millis()
    }

    /// A signing timestamp on the service's clock, strictly increasing for this app: the server
    /// refuses a second request with the same key, timestamp and body as a replay.
    pub fn signing_millis(&self) -> i64 {
        let now = self.now_millis();
        let previous = self
            .last_signed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(now.max(last + 1))
            })
            .expect("the update closure always returns Some");
        now.max(previous + 1)
    }

    /// What the service queued for `to`, oldest first, read from its database: production mode
    /// has no dev mailbox, and with no transport configured its messages stay queued.
    pub async fn queued_messages(&self, to: &str) -> Vec<idconsent_notification::Message> {
        use idconsent_notification::MessageStore;
        let options = idconsent_store_diesel::DbOptions {
            max_connections: 1,
            min_idle: 0,
            ..idconsent_store_diesel::DbOptions::default()
        };
        let db = idconsent_store_diesel::Db::open(&self._database.url, &options).unwrap();
        idconsent_store_diesel::DieselMessageStore::new(db)
            .list_for(to, 100)
            .await
            .unwrap()
    }

    /// The database this app runs on (for a second process on the same data).
    pub fn database_url(&self) -> &str {
        &self._database.url
    }

    /// The database this app runs on, to change it behind the service's back.
    pub fn database(&self) -> &TestDatabase {
        &self._database
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    pub async fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, self.url(path))
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub fn admin_token(&self) -> &'static str {
        "test-admin-token-0123456789abcdef"
    }

    /// Another server process on the same database (same keys): for behaviour that must hold
    /// across processes.
    pub async fn second_server(&self) -> idconsent_server::RunningServer {
        self.second_server_with(|_| {}).await
    }

    /// Like [`TestApp::second_server`], with a chance to adjust the configuration.
    pub async fn second_server_with(
        &self,
        adjust: impl FnOnce(&mut idconsent_server::Config),
    ) -> idconsent_server::RunningServer {
        let mut config = idconsent_server::Config::for_tests(
            PathBuf::from(self._data_dir.path()),
            self._database.url.clone(),
        );
        config.clock = Some(self.clock.clone());
        config.identity.models_dir = identity::models_dir();
        config.untrusted.worker = untrusted_worker();
        adjust(&mut config);
        idconsent_server::start(config).await.unwrap()
    }

    /// Another server process as an operator scaling out runs it: the same database,
    /// `IDC_MASTER_KEY` and `IDC_ADMIN_TOKEN`, and a data directory of its own (where
    /// [`TestApp::second_server`] shares this one's), so nothing it serves may depend on a file
    /// the first process wrote.
    pub async fn stateless_second_server(&self) -> SecondServer {
        self.stateless_second_server_with(|_| {}).await
    }

    /// Like [`TestApp::stateless_second_server`], with a chance to adjust the configuration.
    pub async fn stateless_second_server_with(
        &self,
        adjust: impl FnOnce(&mut idconsent_server::Config),
    ) -> SecondServer {
        let data_dir = tempfile::tempdir().unwrap();
        let server = self
            .second_server_with(|config| {
                config.data_dir = PathBuf::from(data_dir.path());
                adjust(config);
            })
            .await;
        SecondServer {
            server,
            _data_dir: data_dir,
        }
    }

    /// Holds the SQLite database's write lock from another connection until the guard is
    /// dropped: the service's writes wait `busy_timeout`, then fail as "database is locked".
    pub async fn hold_write_lock(&self) -> WriteLock {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (locked, is_locked) = tokio::sync::oneshot::channel::<()>();
        let db = self._database.db.clone();
        let holder = tokio::spawn(async move {
            let _ = db
                .write(move |_| {
                    let _ = locked.send(());
                    let _ = released.recv();
                    Ok(())
                })
                .await;
        });
        is_locked.await.unwrap();
        WriteLock {
            release: Some(release),
            holder: Some(holder),
        }
    }

    /// Stops the server but keeps its database and data directory, for a restart.
    pub async fn stop_server(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }

    /// Ends the server as a crash would ([`idconsent_server::RunningServer::kill`]), keeping
    /// its database and data directory.
    pub async fn kill_server(&mut self) {
        if let Some(server) = self.server.take() {
            server.kill().await;
        }
    }

    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }
}

/// A second server process with a data directory of its own
/// ([`TestApp::stateless_second_server`]); the directory lives as long as this.
#[allow(missing_debug_implementations)]
pub struct SecondServer {
    pub server: idconsent_server::RunningServer,
    _data_dir: tempfile::TempDir,
}

impl SecondServer {
    pub fn url(&self) -> String {
        self.server.url()
    }

    pub async fn stop(self) {
        self.server.stop().await;
    }
}

/// The PDF parser child for in-process servers (ADR 0036): `IDC_TEST_UNTRUSTED_WORKER` if set,
/// else a binary cargo built next to the test binary (in `target/<profile>/`, one level above
/// the test's `deps/`): `idconsent-test-worker` (built with this package's tests) or the
/// `idconsent` binary (built with the server's tests, which use this harness too), the newer of
/// the two when both are there, so that a stale one from an earlier build is not used.
pub fn untrusted_worker() -> PathBuf {
    if let Some(path) = std::env::var_os("IDC_TEST_UNTRUSTED_WORKER") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut dir = exe
        .parent()
        .expect("the test binary's directory")
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    ["idconsent-test-worker", "idconsent"]
        .map(|name| dir.join(name))
        .into_iter()
        .filter_map(|path| {
            let built = std::fs::metadata(&path).ok()?.modified().ok()?;
            Some((built, path))
        })
        .max()
        .map(|(_, path)| path)
        .unwrap_or_else(|| {
            panic!(
                "no PDF parser worker in {}: build one with `cargo build -p idconsent-e2e --bin \
                 idconsent-test-worker`, or set IDC_TEST_UNTRUSTED_WORKER",
                dir.display()
            )
        })
}

/// A held SQLite write lock ([`TestApp::hold_write_lock`]); `release` (or drop) lets go.
#[derive(Debug)]
pub struct WriteLock {
    release: Option<std::sync::mpsc::Sender<()>>,
    holder: Option<tokio::task::JoinHandle<()>>,
}

impl WriteLock {
    pub async fn release(mut self) {
        self.release.take();
        if let Some(holder) = self.holder.take() {
            holder.await.unwrap();
        }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        self.release.take();
    }
}

/// Reads a response as JSON, asserting its status first.
pub async fn json(response: Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
}

/// Asserts the error envelope of CONTRACT §1.
pub async fn error(response: Response, status: u16, kind: &str) -> Value {
    let body = json(response, status).await;
    assert_eq!(body["code"], status, "{body}");
    assert_eq!(body["error"], true, "{body}");
    assert_eq!(body["type"], kind, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    body
}

/// Runs an async test function on SQLite and on PostgreSQL (skipped locally without
/// `IDC_TEST_DATABASE_URL`, required under CI).
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = $crate::TestApp::start($crate::Backend::Sqlite).await {
                        super::$name(app).await;
                    }
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = $crate::TestApp::start($crate::Backend::Postgres).await {
                        super::$name(app).await;
                    }
                }
            }
        )*
    };
}
