//! Starting and stopping the service: database, wiring, HTTP server, background workers.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use idconsent_store_diesel::Db;
use secrecy::ExposeSecret;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use utoipa_actix_web::AppExt;

use crate::config::Config;
use crate::health::DatabaseHealth;
use crate::http;
use crate::http::metrics::Metrics;
use crate::http::openapi::ApiDocs;
use crate::wiring::WiringError;

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("database: {0}")]
    Database(#[from] idconsent_store_diesel::OpenError),
    #[error("configuration: {0}")]
    Wiring(#[from] WiringError),
    #[error("cannot listen on {bind}: {source}")]
    Bind {
        bind: String,
        source: std::io::Error,
    },
    #[error("start-up was interrupted")]
    Interrupted,
}

/// A started service.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    handle: ServerHandle,
    http: JoinHandle<std::io::Result<()>>,
    shutdown: watch::Sender<bool>,
    workers: Vec<JoinHandle<()>>,
    /// Webhook attempts in flight (their own tasks).
    attempts: crate::workers::Attempts,
}

/// Opens and migrates the database, wires the service and starts serving. Returns once the
/// listener is bound.
pub async fn start(config: Config) -> Result<RunningServer, StartError> {
    let database_url = config.database_url.expose_secret().to_owned();
    let db_options = config.db.clone();
    let db = tokio::task::spawn_blocking(move || -> Result<Db, StartError> {
        let db = Db::open(&database_url, &db_options)?;
        let applied = db.migrate()?;
        if !applied.is_empty() {
            tracing::info!(migrations = ?applied, "migrations applied");
        }
        Ok(db)
    })
    .await
    .map_err(|_| StartError::Interrupted)??;

    let listener = TcpListener::bind(&config.bind).map_err(|source| StartError::Bind {
        bind: config.bind.clone(),
        source,
    })?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind {
        bind: config.bind.clone(),
        source,
    })?;
    let workers = config.http_workers;
    let handle_signals = config.handle_signals;
    let mode = config.mode;
    let deployment = crate::wiring::build(config, db).await?;
    let services = deployment.services.clone();
    tracing::info!(
        address = %addr,
        database = services.system.database(),
        mode = ?mode,
        notifications = ?services.system.transport_names(),
        "idconsent listening"
    );

    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(DatabaseHealth::new(metrics.clone()));
    let app = http::AppData {
        config: deployment.config.clone(),
        docs: web::Data::new(ApiDocs::build(|config| http::routes(config, mode))),
        metrics: web::Data::from(metrics),
        health: web::Data::from(health.clone()),
        request_ids: web::Data::new(deployment.request_ids.clone()),
    };
    let mut server = HttpServer::new(move || {
        App::new()
            .configure(|config| app.register(config))
            .configure(|config| http::register(config, &services))
            .configure(http::extractor_configs)
            .wrap(from_fn(http::middleware::request_context))
            .into_utoipa_app()
            .configure(|config| http::routes(config, mode))
            .into_app()
            .default_service(web::to(http::fallback))
    })
    .workers(workers)
    .shutdown_timeout(10)
    .listen(listener)
    .map_err(|source| StartError::Bind {
        bind: addr.to_string(),
        source,
    })?;
    if !handle_signals {
        server = server.disable_signals();
    }
    let server = server.run();
    let handle = server.handle();
    let http = tokio::spawn(server);

    let (shutdown, shutdown_receiver) = watch::channel(false);
    let attempts = crate::workers::Attempts::default();
    let workers = crate::workers::spawn_all(
        &deployment.background,
        &deployment.config,
        &health,
        &shutdown_receiver,
        &attempts,
    );
    Ok(RunningServer {
        addr,
        handle,
        http,
        shutdown,
        workers,
        attempts,
    })
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Ends the process's work at once, as a crash would (for tests of what survives one):
    /// connections dropped, workers and in-flight webhook attempts aborted, nothing recorded.
    /// Whatever it had leased is picked up by another process when the lease ends.
    pub async fn kill(self) {
        for worker in &self.workers {
            worker.abort();
        }
        self.attempts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .abort_all();
        self.handle.stop(false).await;
        self.http.abort();
    }

    /// Stops accepting, lets in-flight requests finish, then stops the workers.
    pub async fn stop(self) {
        self.handle.stop(true).await;
        self.wait().await;
    }

    /// Waits until the HTTP server stops (on SIGTERM or SIGINT), then stops the workers.
    pub async fn wait(self) {
        match self.http.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::error!(error = %error, "HTTP server failed"),
            Err(error) => tracing::error!(error = %error, "HTTP server task failed"),
        }
        let _ = self.shutdown.send(true);
        for worker in self.workers {
            if tokio::time::timeout(Duration::from_secs(10), worker)
                .await
                .is_err()
            {
                tracing::warn!("a background worker did not stop within 10 s");
            }
        }
        tracing::info!("idconsent stopped");
    }
}
