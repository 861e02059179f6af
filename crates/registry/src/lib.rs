#![doc = include_str!("../README.md")]

use std::time::Duration;

use async_trait::async_trait;
use idconsent_merchant::ports::{
    BusinessRegistry, RegistryAnswer, RegistryQuery, RegistryUnavailable,
};
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

/// The registration number the sandbox registry does not know.
pub const SANDBOX_UNKNOWN_NUMBER: &str = "000000000";

/// A registry for development and sandbox onboarding (see the crate docs).
#[derive(Debug, Clone, Copy, Default)]
pub struct SandboxRegistry;

#[async_trait]
impl BusinessRegistry for SandboxRegistry {
    async fn check(&self, query: &RegistryQuery) -> Result<RegistryAnswer, RegistryUnavailable> {
        Ok(if query.registration_number == SANDBOX_UNKNOWN_NUMBER {
            RegistryAnswer::NotFound
        } else {
            RegistryAnswer::Matched
        })
    }
}

/// A registry provider over HTTP.
#[derive(Debug, Clone)]
pub struct HttpRegistry {
    client: reqwest::Client,
    url: reqwest::Url,
    auth: Option<(HeaderName, HeaderValue)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRegistryConfig(pub &'static str);

impl std::fmt::Display for InvalidRegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for InvalidRegistryConfig {}

impl HttpRegistry {
    pub fn new(url: &str, auth_header: Option<&str>) -> Result<Self, InvalidRegistryConfig> {
        let url = reqwest::Url::parse(url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or(InvalidRegistryConfig(
                "IDC_REGISTRY_URL must be an http(s) URL",
            ))?;
        let auth = auth_header
            .map(|text| {
                let (name, value) = text.split_once(':')?;
                let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
                let mut value = HeaderValue::from_str(value.trim()).ok()?;
                value.set_sensitive(true);
                Some((name, value))
            })
            .map(|parsed| {
                parsed.ok_or(InvalidRegistryConfig(
                    "IDC_REGISTRY_AUTH_HEADER must look like \"Name: value\"",
                ))
            })
            .transpose()?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| InvalidRegistryConfig("cannot build the HTTP client"))?;
        Ok(Self { client, url, auth })
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProviderQuery<'a> {
    registration_number: &'a str,
    registered_name: &'a str,
    date_registered: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderAnswer {
    found: bool,
    registered_name: Option<String>,
    date_registered: Option<String>,
}

#[async_trait]
impl BusinessRegistry for HttpRegistry {
    async fn check(&self, query: &RegistryQuery) -> Result<RegistryAnswer, RegistryUnavailable> {
        let mut request = self.client.post(self.url.clone()).json(&ProviderQuery {
            registration_number: &query.registration_number,
            registered_name: &query.registered_name,
            date_registered: query.date_registered.to_string(),
        });
        if let Some((name, value)) = &self.auth {
            request = request.header(name.clone(), value.clone());
        }
        let response = request
            .send()
            .await
            .map_err(|_| RegistryUnavailable("the provider could not be reached".into()))?;
        if !response.status().is_success() {
            return Err(RegistryUnavailable(format!(
                "the provider answered {}",
                response.status()
            )));
        }
        let answer: ProviderAnswer = response
            .json()
            .await
            .map_err(|_| RegistryUnavailable("the provider's answer is not understood".into()))?;
        if !answer.found {
            return Ok(RegistryAnswer::NotFound);
        }
        let same_name = answer
            .registered_name
            .as_deref()
            .is_some_and(|name| normalise(name) == normalise(&query.registered_name));
        let same_date = answer
            .date_registered
            .as_deref()
            .is_some_and(|date| date == query.date_registered.to_string());
        Ok(if same_name && same_date {
            RegistryAnswer::Matched
        } else {
            RegistryAnswer::Mismatch
        })
    }
}

/// Letters and digits only, lower case: "Example Shop, L.L.C." = "example shop llc".
fn normalise(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_without_case_or_punctuation() {
        assert_eq!(
            normalise("Example Shop, L.L.C."),
            normalise("EXAMPLE SHOP LLC")
        );
        assert_ne!(normalise("Example Shop"), normalise("Example Shops"));
    }

    #[test]
    fn configuration_is_checked() {
        assert!(HttpRegistry::new("ftp://registry.example", None).is_err());
        assert!(HttpRegistry::new("https://registry.example/check", Some("nonsense")).is_err());
        assert!(HttpRegistry::new("https://registry.example/check", Some("X-Key: k")).is_ok());
    }
}
