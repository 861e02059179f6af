#![doc = include_str!("../README.md")]

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use idconsent_kernel::web_url::is_private_ip;
use idconsent_webhook::{PostOutcome, WebhookRequest, WebhookTransport};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

const REFUSED: &str = "refused: private address";

/// Posts webhooks over HTTP(S).
#[derive(Debug, Clone)]
pub struct HttpWebhookTransport {
    client: reqwest::Client,
    allow_private: bool,
}

#[derive(Debug)]
pub struct BuildError(String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot build the webhook HTTP client: {}", self.0)
    }
}

impl std::error::Error for BuildError {}

impl HttpWebhookTransport {
    pub fn new(allow_private: bool) -> Result<Self, BuildError> {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent("idconsent-webhooks/1")
            // A proxy from the environment would connect for us, past the resolved-address
            // check below: webhooks always go direct.
            .no_proxy();
        if !allow_private {
            builder = builder.dns_resolver(Arc::new(PublicOnly));
        }
        let client = builder
            .build()
            .map_err(|error| BuildError(error.to_string()))?;
        Ok(Self {
            client,
            allow_private,
        })
    }
}

/// Resolves names and keeps only public addresses.
#[derive(Debug)]
struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|addr| !is_private_ip(addr.ip()))
                .collect();
            if public.is_empty() {
                return Err(REFUSED.into());
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

fn refuses_literal(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => is_private_ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => is_private_ip(IpAddr::V6(ip)),
        Some(url::Host::Domain(domain)) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            domain == "localhost" || domain.ends_with(".localhost")
        }
        None => true,
    }
}

#[async_trait]
impl WebhookTransport for HttpWebhookTransport {
    async fn post(&self, request: WebhookRequest) -> PostOutcome {
        let started = Instant::now();
        let no_answer = |error: String| PostOutcome::NoAnswer {
            error,
            duration: started.elapsed(),
        };
        let Ok(url) = reqwest::Url::parse(&request.url) else {
            return no_answer("invalid URL".into());
        };
        if !self.allow_private && refuses_literal(&url) {
            return no_answer(REFUSED.into());
        }
        let mut builder = self
            .client
            .post(url)
            .timeout(request.timeout)
            .body(request.body);
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        match builder.send().await {
            Ok(response) => PostOutcome::Answered {
                status: response.status().as_u16(),
                duration: started.elapsed(),
            },
            Err(error) => no_answer(describe(&error, request.timeout)),
        }
    }
}

/// A short reason without the URL (which may carry tokens in its query).
fn describe(error: &reqwest::Error, timeout: Duration) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(current) = source {
        if current.to_string().contains(REFUSED) {
            return REFUSED.into();
        }
        source = current.source();
    }
    if error.is_timeout() {
        format!("timed out after {} ms", timeout.as_millis())
    } else if error.is_connect() {
        "connection failed".into()
    } else {
        "request failed".into()
    }
}
