use std::time::Duration;

use async_trait::async_trait;
use idconsent_notification::{Address, Channel, Message, MessageTransport, TransportError};
use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

/// Email over SMTP (lettre).
#[derive(Debug, Clone)]
pub struct SmtpEmail {
    mailer: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

#[derive(Debug, thiserror::Error)]
pub enum SmtpConfigError {
    #[error("IDC_SMTP_URL is not a usable SMTP URL: {0}")]
    Url(String),
    #[error("IDC_SMTP_FROM is not a mailbox such as \"idconsent <no-reply@example.com>\"")]
    From,
}

impl SmtpEmail {
    /// `url` as lettre reads it: `smtps://user:pass@host:465`, `smtp://user:pass@host:587?tls=required`,
    /// or `smtp://127.0.0.1:25` for a local relay.
    pub fn new(url: &str, from: &str, timeout: Duration) -> Result<Self, SmtpConfigError> {
        let mailer = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|error| SmtpConfigError::Url(error.to_string()))?
            .timeout(Some(timeout))
            .build();
        let from = from.parse().map_err(|_| SmtpConfigError::From)?;
        Ok(Self { mailer, from })
    }
}

#[async_trait]
impl MessageTransport for SmtpEmail {
    fn channel(&self) -> Channel {
        Channel::Email
    }

    fn name(&self) -> &'static str {
        "smtp"
    }

    async fn deliver(&self, message: &Message) -> Result<(), TransportError> {
        let Address::Email(to) = &message.to else {
            return Err(TransportError::Permanent("not an email address".into()));
        };
        let to: Mailbox = to
            .as_str()
            .parse()
            .map_err(|_| TransportError::Permanent("recipient is not a valid mailbox".into()))?;
        let email = lettre::Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(message.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(message.body.clone())
            .map_err(|error| TransportError::Permanent(format!("cannot build email: {error}")))?;
        match self.mailer.send(email).await {
            Ok(_) => Ok(()),
            Err(error) if error.is_permanent() => {
                Err(TransportError::Permanent(format!("SMTP rejected: {error}")))
            }
            Err(error) => Err(TransportError::Temporary(format!("SMTP: {error}"))),
        }
    }
}
