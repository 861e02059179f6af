//! The steps of a hosted approval page (see the crate README).

use std::sync::Arc;
use std::time::Duration;

use idconsent_approval::{ApprovalRegistry, Decision, Purpose, Recipient, Target, TargetError};
use idconsent_enduser::ports::PasskeyCeremony;
use idconsent_kernel::{Clock, EmailAddress, KeyedHash, RandomSource, Timestamp, constant_time_eq};
use idconsent_notification::{Address, NewMessage, NotificationSender};
use serde_json::Value;

use crate::guesses::{GuessPolicy, Taken};
use crate::ports::{ConfirmationStore, Issued, NewCode, StoreError};

const CODE_HASH: &str = "hosted-code";
pub(crate) const TOKEN_HASH: &str = "hosted-token";

#[derive(Debug, Clone)]
pub struct HostedSettings {
    pub code_ttl: Duration,
    /// Guesses per code; the last wrong one locks the subject for `lock`.
    pub attempts: u32,
    pub lock: Duration,
    /// Wrong codes per subject (object and recipient) in any `guess_window`, across resends;
    /// the last one locks the subject until the oldest leaves the window.
    pub guesses_per_window: u32,
    pub guess_window: Duration,
    /// The shortest time between two codes for one subject.
    pub resend_after: Duration,
    /// How long a page token lasts.
    pub token_ttl: Duration,
}

impl Default for HostedSettings {
    fn default() -> Self {
        Self {
            code_ttl: Duration::from_secs(10 * 60),
            attempts: 5,
            lock: Duration::from_secs(15 * 60),
            guesses_per_window: 10,
            guess_window: Duration::from_secs(24 * 3600),
            resend_after: Duration::from_secs(60),
            token_ttl: Duration::from_secs(15 * 60),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HostedPorts {
    pub approvals: Arc<ApprovalRegistry>,
    pub confirmations: Arc<dyn ConfirmationStore>,
    pub passkeys: Arc<dyn PasskeyCeremony>,
    pub notifications: Arc<dyn NotificationSender>,
    pub hasher: Arc<dyn KeyedHash>,
    pub random: Arc<dyn RandomSource>,
    pub clock: Arc<dyn Clock>,
}

#[derive(Debug, thiserror::Error)]
pub enum HostedError {
    #[error("Not found")]
    NotFound,
    /// The object can no longer be decided; what it is now.
    #[error("{0}")]
    NotPending(String),
    #[error("A code was sent less than a minute ago; wait before asking again")]
    TooSoon { retry_after_secs: u64 },
    #[error("Too many wrong codes; try again later")]
    Locked { retry_after_secs: u64 },
    #[error("Wrong or expired code")]
    WrongCode { attempts_left: u32 },
    /// The page token is missing, wrong, expired or already used: confirm the address again.
    #[error("Confirm your email address first (the page token is missing, expired or used)")]
    NoToken,
    #[error("The passkey step is missing or did not verify")]
    Passkey(String),
    /// What the page showed (its context hash) is not the object as it is now.
    #[error(
        "What you are asked to approve changed after this page was loaded; reload the page to \
         review it"
    )]
    Changed,
    /// The page's visitors name themselves (a signer) and this step named nobody.
    #[error("Say who you are: `email` is required on this page")]
    NoAddress,
    /// The page's document is no longer stored: nothing to show, nothing to retry.
    #[error(
        "The document of this page is no longer stored: it cannot be shown. What was asked \
         remains readable."
    )]
    Gone,
    #[error("A monthly quota of the merchant is used up")]
    Quota {
        quota: idconsent_kernel::QuotaExceeded,
        retry_after_secs: u64,
    },
    #[error("internal error")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl From<StoreError> for HostedError {
    fn from(error: StoreError) -> Self {
        HostedError::Unavailable(Box::new(error))
    }
}

impl From<TargetError> for HostedError {
    fn from(error: TargetError) -> Self {
        match error {
            TargetError::NotFound => HostedError::NotFound,
            TargetError::NotPending(message) => HostedError::NotPending(message),
            // Only a decision charges a quota, and `decide` maps it with the real retry time;
            // describing an object never does.
            TargetError::Quota(quota) => HostedError::Quota {
                quota,
                retry_after_secs: 3600,
            },
            TargetError::Unavailable(source) => HostedError::Unavailable(source),
        }
    }
}

/// Options for the browser's assertion, and what it commits to.
#[derive(Debug, Clone, PartialEq)]
pub struct AssertionStart {
    /// `{"publicKey": …}` for `navigator.credentials.get`.
    pub options: Value,
    pub context: Value,
    /// Hex SHA-256 of the context's canonical JSON.
    pub context_hash: String,
    /// Hex of the nonce the challenge mixes in.
    pub nonce: String,
}

/// The recipient's answer on the page.
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    pub decision: Decision,
    /// The hash of what the page showed (its `data-context-hash`).
    pub shown: &'a str,
    /// The assertion over the challenge of the passkey step (required when the target says
    /// a passkey is).
    pub assertion: Option<&'a Value>,
    pub client: Client,
}

/// Who is at the page, for the decision's audit trail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Client {
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
}

#[derive(Debug, Clone)]
pub struct HostedApprovals {
    pub(crate) ports: HostedPorts,
    settings: HostedSettings,
}

pub(crate) fn retry_after(until: Timestamp, now: Timestamp) -> u64 {
    until.since(now).as_secs().max(1)
}

impl HostedApprovals {
    pub fn new(ports: HostedPorts, settings: HostedSettings) -> Self {
        Self { ports, settings }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// The pending object `purpose` names and its email recipient; "not found" for anything a
    /// hosted page cannot decide (an unknown object, one addressed to a phone).
    pub(crate) async fn target(
        &self,
        purpose: &Purpose,
    ) -> Result<(Target, EmailAddress), HostedError> {
        let target = self.ports.approvals.describe(purpose).await?;
        match &target.recipient {
            Recipient::Email(email) => {
                let email = email.clone();
                Ok((target, email))
            }
            Recipient::Phone(_) => Err(HostedError::NotFound),
        }
    }

    /// One record per object and recipient: a code for one mandate proves nothing for another.
    /// Named by the target's canonical id and recipient, never by the purpose as typed, so
    /// every spelling of an object or a signer's address shares one set of attempts.
    pub(crate) fn subject(purpose: &Purpose, target: &Target, email: &EmailAddress) -> String {
        format!(
            "{}:{}:{}",
            purpose.kind.as_str(),
            target.canonical_id,
            email.as_str().to_ascii_lowercase()
        )
    }

    /// The rules a guess is judged by.
    fn guess_policy(&self) -> GuessPolicy {
        GuessPolicy {
            lock: self.settings.lock,
            per_window: self.settings.guesses_per_window,
            window: self.settings.guess_window,
        }
    }

    /// Refuses a step made on a page that showed something other than the object now.
    pub(crate) fn check_shown(target: &Target, shown: &str) -> Result<(), HostedError> {
        if target.page_hash() == shown.trim() {
            Ok(())
        } else {
            Err(HostedError::Changed)
        }
    }

    /// Emails a fresh 6-digit code to the object's recipient: at most one a minute, none while
    /// locked.
    pub async fn send_code(&self, purpose: &Purpose) -> Result<(), HostedError> {
        let (target, email) = self.target(purpose).await?;
        // "the mandate from Gym Co", from what the page shows.
        let what = match target.context["merchant"].as_str() {
            Some(merchant) => format!("the {} from {merchant}", purpose.kind.as_str()),
            None => format!("the {}", purpose.kind.as_str()),
        };
        let now = self.now();
        let code = self.ports.random.digits(6);
        let issued = self
            .ports
            .confirmations
            .issue_code(
                &NewCode {
                    subject: Self::subject(purpose, &target, &email),
                    code_hash: self.ports.hasher.hex(CODE_HASH, code.as_bytes()),
                    expires_at: now.plus(self.settings.code_ttl),
                    attempts: self.settings.attempts,
                    sent_at: now,
                },
                now.minus(self.settings.resend_after),
                now,
            )
            .await?;
        match issued {
            Issued::Stored => {}
            Issued::TooSoon { last_sent_at } => {
                return Err(HostedError::TooSoon {
                    retry_after_secs: retry_after(
                        last_sent_at.plus(self.settings.resend_after),
                        now,
                    ),
                });
            }
            Issued::Locked { until } => {
                return Err(HostedError::Locked {
                    retry_after_secs: retry_after(until, now),
                });
            }
        }
        let address = Address::parse(email.as_str())
            .map_err(|_| HostedError::Unavailable("the recipient is not an address".into()))?;
        self.ports
            .notifications
            .send(NewMessage {
                to: address,
                subject: "Your idconsent confirmation code".into(),
                body: format!(
                    "Your code to review {what} is {code}. It expires in {} minutes. \
                     Never share it.",
                    self.settings.code_ttl.as_secs() / 60
                ),
                code: Some(code),
                link: None,
            })
            .await
            .map_err(|error| HostedError::Unavailable(Box::new(error)))?;
        Ok(())
    }

    /// Checks a code; a right one returns the page token. The guess is taken before the
    /// comparison, so concurrent guesses never exceed the code's attempts nor the subject's
    /// guesses in the window (ten a day, across resends); a right code is given back.
    pub async fn verify_code(&self, purpose: &Purpose, code: &str) -> Result<String, HostedError> {
        let (target, email) = self.target(purpose).await?;
        let subject = Self::subject(purpose, &target, &email);
        let now = self.now();
        let taken = self
            .ports
            .confirmations
            .take_attempt(&subject, &self.guess_policy(), now)
            .await?;
        let (code_hash, attempts_left, locked_until, taken_at) = match taken {
            Taken::Code {
                code_hash,
                attempts_left,
                locked_until,
                taken_at,
            } => (code_hash, attempts_left, locked_until, taken_at),
            Taken::NoCode => return Err(HostedError::WrongCode { attempts_left: 0 }),
            Taken::Locked { until } => {
                return Err(HostedError::Locked {
                    retry_after_secs: retry_after(until, now),
                });
            }
        };
        let given = self.ports.hasher.hex(CODE_HASH, code.trim().as_bytes());
        if !constant_time_eq(given.as_bytes(), code_hash.as_bytes()) {
            return Err(match locked_until {
                Some(until) => HostedError::Locked {
                    retry_after_secs: retry_after(until, now),
                },
                None if attempts_left == 0 => HostedError::Locked {
                    retry_after_secs: self.settings.lock.as_secs(),
                },
                None => HostedError::WrongCode { attempts_left },
            });
        }
        let token = hex::encode(self.ports.random.bytes::<32>());
        let confirmed = self
            .ports
            .confirmations
            .confirm(
                &subject,
                &code_hash,
                taken_at,
                &self.ports.hasher.hex(TOKEN_HASH, token.as_bytes()),
                now.plus(self.settings.token_ttl),
            )
            .await?;
        if !confirmed {
            // The same code was confirmed by a concurrent request.
            return Err(HostedError::WrongCode { attempts_left });
        }
        Ok(token)
    }

    /// Housekeeping: records whose code, token, lock and guesses are all long gone (a record
    /// is kept as long as its guesses count).
    pub async fn forget_expired(&self) -> Result<u64, HostedError> {
        let before = self.now().minus(
            self.settings
                .lock
                .max(self.settings.token_ttl)
                .max(self.settings.guess_window),
        );
        Ok(self.ports.confirmations.forget_before(before).await?)
    }
}
