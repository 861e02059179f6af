//! Prometheus metrics: request counts and latency histograms per route.

use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    cause: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

/// Latency buckets in seconds, from half a millisecond to five seconds.
const BUCKETS: [f64; 13] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    unavailable: Family<CauseLabels, Counter>,
    database_up: Gauge,
}

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("idconsent");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "http_requests",
            "HTTP requests by method, route pattern and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by method and route pattern",
            latency.clone(),
        );
        let unavailable = Family::<CauseLabels, Counter>::default();
        registry.register(
            "http_unavailable",
            "503 answers by cause (database: the database could not be reached; document_parsers: every PDF parser child stayed busy)",
            unavailable.clone(),
        );
        let database_up = Gauge::default();
        database_up.set(1);
        registry.register(
            "database_up",
            "1 while the database answers, 0 while it is unreachable",
            database_up.clone(),
        );
        Self {
            registry: Mutex::new(registry),
            requests,
            latency,
            unavailable,
            database_up,
        }
    }

    /// Counts one 503 answer and its cause.
    pub fn unavailable(&self, cause: &str) {
        self.unavailable
            .get_or_create(&CauseLabels {
                cause: cause.to_owned(),
            })
            .inc();
    }

    /// Whether the database answers (the `database_up` gauge).
    pub fn set_database_up(&self, up: bool) {
        self.database_up.set(i64::from(up));
    }

    /// Records one finished request. `route` is the matched pattern (`/v1/consents/auth/{sessionId}`),
    /// never the raw path, so ids do not explode the label space.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)?;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_times_requests_per_route() {
        let metrics = Metrics::new();
        metrics.observe("GET", "/healthz", 200, 0.0004);
        metrics.observe("GET", "/healthz", 200, 0.002);
        let text = metrics.encode().unwrap();
        assert!(
            text.contains(
                r#"idconsent_http_requests_total{method="GET",route="/healthz",status="200"} 2"#
            ),
            "{text}"
        );
        assert!(text.contains(
            r#"idconsent_http_request_duration_seconds_bucket{le="0.0005",method="GET",route="/healthz"} 1"#
        ), "{text}");
    }
}
