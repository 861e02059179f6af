//! The service's end-user API, as the mobile app calls it.

use std::fmt;
use std::time::Duration;

use anyhow::Context as _;
use reqwest::Method;
use serde_json::Value;

/// An error envelope from the service (CONTRACT §1).
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub kind: String,
    pub message: String,
    pub route: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {}: {}",
            self.route, self.status, self.kind, self.message
        )
    }
}

impl std::error::Error for ApiError {}

impl ApiError {
    /// Whether `error` is the service answering `status`.
    pub fn is(error: &anyhow::Error, status: u16) -> bool {
        error
            .downcast_ref::<ApiError>()
            .is_some_and(|api| api.status == status)
    }
}

/// A client for one server, sending this installation's `X-Device-ID` on every call.
#[derive(Debug)]
pub struct Api {
    client: reqwest::Client,
    base: String,
    installation: String,
}

impl Api {
    pub fn new(server: &str, installation: &str) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("idconsent-wallet/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot build the HTTP client")?;
        Ok(Self {
            client,
            base: normalise_server(server),
            installation: installation.to_owned(),
        })
    }

    /// `POST path` with a JSON body; returns the envelope's `data`.
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        self.call(Method::POST, path, Some(body), None, &[]).await
    }

    /// `GET path` with an optional end-user access token; returns the envelope's `data`.
    pub async fn get(
        &self,
        path: &str,
        bearer: Option<&str>,
        query: &[(&str, &str)],
    ) -> anyhow::Result<Value> {
        self.call(Method::GET, path, None, bearer, query).await
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        bearer: Option<&str>,
        query: &[(&str, &str)],
    ) -> anyhow::Result<Value> {
        let route = format!("{method} {path}");
        let mut url = reqwest::Url::parse(&format!("{}{path}", self.base))
            .with_context(|| format!("{route}: {} is not a valid server URL", self.base))?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let mut request = self
            .client
            .request(method, url)
            .header("x-device-id", &self.installation);
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(token) = bearer {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("{route}: cannot reach the service at {}", self.base))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .with_context(|| format!("{route}: the response was cut off"))?;
        let envelope: Value = serde_json::from_str(&text).map_err(|_| ApiError {
            status,
            kind: "unexpected_response".into(),
            message: format!("not JSON: {}", text.chars().take(200).collect::<String>()),
            route: route.clone(),
        })?;
        if !(200..300).contains(&status) || envelope["error"] == Value::Bool(true) {
            let mut message = envelope["message"].as_str().unwrap_or("").to_owned();
            if let Some(details) = envelope["details"].as_array() {
                let listed: Vec<String> = details
                    .iter()
                    .map(|detail| {
                        format!(
                            "{} {}",
                            detail["field"].as_str().unwrap_or("?"),
                            detail["message"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                if !listed.is_empty() {
                    message = format!("{message} ({})", listed.join("; "));
                }
            }
            return Err(ApiError {
                status,
                kind: envelope["type"].as_str().unwrap_or("error").to_owned(),
                message,
                route,
            }
            .into());
        }
        Ok(envelope.get("data").cloned().unwrap_or(Value::Null))
    }
}

/// `localhost:8080` → `http://localhost:8080`; no trailing slash.
pub fn normalise_server(server: &str) -> String {
    let server = server.trim().trim_end_matches('/');
    if server.starts_with("http://") || server.starts_with("https://") {
        server.to_owned()
    } else {
        format!("http://{server}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_addresses_are_normalised() {
        assert_eq!(normalise_server("localhost:8080"), "http://localhost:8080");
        assert_eq!(
            normalise_server("https://idc.example/"),
            "https://idc.example"
        );
        assert_eq!(
            normalise_server(" http://127.0.0.1:8080 "),
            "http://127.0.0.1:8080"
        );
    }
}
