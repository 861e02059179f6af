use std::fmt;

use idconsent_kernel::id::MessageId;
use idconsent_kernel::{EmailAddress, PhoneNumber, Timestamp};

/// How a message travels; decided by its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    Sms,
    Email,
}

impl Channel {
    pub const ALL: [Channel; 2] = [Channel::Sms, Channel::Email];

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Sms => "sms",
            Channel::Email => "email",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == text)
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a message goes: a phone number (SMS) or an email address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Address {
    Phone(PhoneNumber),
    Email(EmailAddress),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be an E.164 phone number or an email address")]
pub struct InvalidAddress;

impl Address {
    /// A phone number when it starts with `+`, else an email address.
    pub fn parse(text: &str) -> Result<Self, InvalidAddress> {
        if text.starts_with('+') {
            PhoneNumber::parse(text)
                .map(Address::Phone)
                .map_err(|_| InvalidAddress)
        } else {
            EmailAddress::parse(text)
                .map(Address::Email)
                .map_err(|_| InvalidAddress)
        }
    }

    pub fn channel(&self) -> Channel {
        match self {
            Address::Phone(_) => Channel::Sms,
            Address::Email(_) => Channel::Email,
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Address::Phone(phone) => phone.as_str(),
            Address::Email(email) => email.as_str(),
        }
    }
}

impl From<PhoneNumber> for Address {
    fn from(phone: PhoneNumber) -> Self {
        Address::Phone(phone)
    }
}

impl From<EmailAddress> for Address {
    fn from(email: EmailAddress) -> Self {
        Address::Email(email)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message a domain wants sent.
///
/// `code` and `link` repeat what `body` says in a machine-readable form (the dev mailbox shows
/// them so tests and developers need not scrape the text). They are secrets: never log them.
#[derive(Clone, PartialEq, Eq)]
pub struct NewMessage {
    pub to: Address,
    pub subject: String,
    pub body: String,
    pub code: Option<String>,
    pub link: Option<String>,
}

impl fmt::Debug for NewMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewMessage")
            .field("channel", &self.to.channel())
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// Where a message is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryStatus {
    /// Waiting for (another) delivery attempt.
    Queued,
    /// Handed to the channel's transport.
    Delivered,
    /// Every attempt failed; kept for inspection.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Queued => "queued",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Queued, Self::Delivered, Self::Failed]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A message in the outbox.
#[derive(Clone, PartialEq, Eq)]
pub struct Message {
    pub id: MessageId,
    pub to: Address,
    pub subject: String,
    /// Empty once a real transport has delivered it (content is erased after delivery).
    pub body: String,
    pub code: Option<String>,
    pub link: Option<String>,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub next_attempt_at: Timestamp,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
}

impl Message {
    pub fn channel(&self) -> Channel {
        self.to.channel()
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Message")
            .field("id", &self.id)
            .field("channel", &self.channel())
            .field("status", &self.status)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_picks_the_channel() {
        assert_eq!(
            Address::parse("+15551234567").unwrap().channel(),
            Channel::Sms
        );
        assert_eq!(
            Address::parse("a@example.com").unwrap().channel(),
            Channel::Email
        );
        assert!(Address::parse("+1").is_err());
        assert!(Address::parse("nobody").is_err());
    }

    #[test]
    fn debug_output_never_shows_content() {
        let message = NewMessage {
            to: Address::parse("+15551234567").unwrap(),
            subject: "Your code".into(),
            body: "Your code is 123456".into(),
            code: Some("123456".into()),
            link: None,
        };
        let shown = format!("{message:?}");
        assert!(!shown.contains("123456"));
        assert!(!shown.contains("+1555"));
    }
}
