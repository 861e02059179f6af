//! The service's own health: the database and the notification transports.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use idconsent_notification::Dispatcher;
use idconsent_store_diesel::Db;

/// What `/readyz` reports.
#[derive(Debug, Clone)]
pub struct Readiness {
    /// `sqlite` or `postgres`.
    pub database: &'static str,
    /// `ok`, `unreachable` or `timed out`.
    pub database_status: &'static str,
    /// Transport per channel, or `missing`.
    pub notifications: BTreeMap<&'static str, &'static str>,
}

impl Readiness {
    pub fn database_ok(&self) -> bool {
        self.database_status == "ok"
    }

    pub fn transports_missing(&self) -> bool {
        self.notifications.values().any(|name| *name == "missing")
    }
}

#[derive(Debug)]
pub struct SystemStatus {
    db: Db,
    dispatcher: Arc<Dispatcher>,
}

impl SystemStatus {
    pub fn new(db: Db, dispatcher: Arc<Dispatcher>) -> Self {
        Self { db, dispatcher }
    }

    pub fn database(&self) -> &'static str {
        self.db.backend().as_str()
    }

    pub fn transport_names(&self) -> Vec<(&'static str, &'static str)> {
        self.dispatcher
            .transport_names()
            .into_iter()
            .map(|(channel, name)| (channel.as_str(), name))
            .collect()
    }

    /// Pings the database (two seconds at most) and lists the transports.
    pub async fn readiness(&self) -> Readiness {
        let database_status =
            match tokio::time::timeout(Duration::from_secs(2), self.db.ping()).await {
                Ok(Ok(())) => "ok",
                Ok(Err(error)) => {
                    tracing::warn!(error = %error, "readiness: database check failed");
                    "unreachable"
                }
                Err(_) => "timed out",
            };
        let mut notifications: BTreeMap<&'static str, &'static str> =
            self.transport_names().into_iter().collect();
        for channel in self.dispatcher.missing_channels() {
            notifications.insert(channel.as_str(), "missing");
        }
        Readiness {
            database: self.database(),
            database_status,
            notifications,
        }
    }
}
