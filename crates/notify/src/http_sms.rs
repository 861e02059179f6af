use std::time::Duration;

use async_trait::async_trait;
use idconsent_notification::{Address, Channel, Message, MessageTransport, TransportError};
use reqwest::header::{HeaderName, HeaderValue};

/// How to reach an HTTP SMS gateway.
#[derive(Debug, Clone)]
pub struct HttpSmsConfig {
    /// The gateway endpoint; receives `POST` with `{"to": "+1555…", "body": "…"}`.
    pub url: String,
    /// One header such as `Authorization: Bearer abc`, sent with every request.
    pub auth_header: Option<String>,
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum HttpSmsConfigError {
    #[error("IDC_SMS_GATEWAY_URL must be an http(s) URL")]
    Url,
    #[error("IDC_SMS_GATEWAY_AUTH_HEADER must look like \"Name: value\"")]
    Header,
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// SMS through an HTTP gateway.
#[derive(Debug, Clone)]
pub struct HttpSms {
    client: reqwest::Client,
    url: reqwest::Url,
    auth: Option<(HeaderName, HeaderValue)>,
}

impl HttpSms {
    pub fn new(config: &HttpSmsConfig) -> Result<Self, HttpSmsConfigError> {
        let url = reqwest::Url::parse(&config.url).map_err(|_| HttpSmsConfigError::Url)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpSmsConfigError::Url);
        }
        let auth = config
            .auth_header
            .as_deref()
            .map(parse_header)
            .transpose()?;
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| HttpSmsConfigError::Client(error.to_string()))?;
        Ok(Self { client, url, auth })
    }
}

fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), HttpSmsConfigError> {
    let (name, value) = text.split_once(':').ok_or(HttpSmsConfigError::Header)?;
    let name =
        HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| HttpSmsConfigError::Header)?;
    let mut value = HeaderValue::from_str(value.trim()).map_err(|_| HttpSmsConfigError::Header)?;
    value.set_sensitive(true);
    Ok((name, value))
}

#[derive(serde::Serialize)]
struct SmsRequest<'a> {
    to: &'a str,
    body: &'a str,
}

#[async_trait]
impl MessageTransport for HttpSms {
    fn channel(&self) -> Channel {
        Channel::Sms
    }

    fn name(&self) -> &'static str {
        "http-sms"
    }

    async fn deliver(&self, message: &Message) -> Result<(), TransportError> {
        let Address::Phone(to) = &message.to else {
            return Err(TransportError::Permanent("not a phone number".into()));
        };
        let mut request = self.client.post(self.url.clone()).json(&SmsRequest {
            to: to.as_str(),
            body: &message.body,
        });
        if let Some((name, value)) = &self.auth {
            request = request.header(name.clone(), value.clone());
        }
        let response = request.send().await.map_err(|error| {
            TransportError::Temporary(format!("SMS gateway unreachable: {}", without_url(&error)))
        })?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429 {
            Err(TransportError::Temporary(format!(
                "SMS gateway answered {status}"
            )))
        } else {
            Err(TransportError::Permanent(format!(
                "SMS gateway answered {status}"
            )))
        }
    }
}

/// reqwest errors include the URL, which may carry a token in its query.
fn without_url(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "timed out".into()
    } else if error.is_connect() {
        "connection failed".into()
    } else {
        "request failed".into()
    }
}
