//! The steps of a hosted approval page (see the crate README).

use std::sync::Arc;
use std::time::Duration;

use idconsent_approval::commitment::{context_hash, derive_challenge};
use idconsent_approval::{
    AlsoFn, ApprovalRegistry, ApprovedVia, Approver, Decision, Purpose, Recipient, Target,
    TargetError,
};
use idconsent_enduser::ports::{PasskeyCeremony, PasskeyError, StoredPasskey};
use idconsent_kernel::{Clock, EmailAddress, KeyedHash, RandomSource, Timestamp, constant_time_eq};
use idconsent_notification::{Address, NewMessage, NotificationSender};
use serde_json::Value;

use crate::ports::{CeremonyStep, ConfirmationStore, Issued, NewCode, StoreError, Taken};

const CODE_HASH: &str = "hosted-code";
const TOKEN_HASH: &str = "hosted-token";

#[derive(Debug, Clone)]
pub struct HostedSettings {
    pub code_ttl: Duration,
    /// Guesses per code; the last wrong one locks the subject for `lock`.
    pub attempts: u32,
    pub lock: Duration,
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

/// What the page shows about the object.
#[derive(Debug, Clone, PartialEq)]
pub struct PageView {
    pub email: EmailAddress,
    pub context: Value,
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
    /// The assertion over the challenge of the passkey step.
    pub assertion: Option<&'a Value>,
    /// Whether a decision without a verified assertion is refused.
    pub passkey_required: bool,
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
    ports: HostedPorts,
    settings: HostedSettings,
}

fn retry_after(until: Timestamp, now: Timestamp) -> u64 {
    until.since(now).as_secs().max(1)
}

impl HostedApprovals {
    pub fn new(ports: HostedPorts, settings: HostedSettings) -> Self {
        Self { ports, settings }
    }

    fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// The pending object `purpose` names and its email recipient; "not found" for anything a
    /// hosted page cannot decide (an unknown object, one addressed to a phone).
    async fn target(&self, purpose: &Purpose) -> Result<(Target, EmailAddress), HostedError> {
        let target = self.ports.approvals.describe(purpose).await?;
        match &target.recipient {
            Recipient::Email(email) => {
                let email = email.clone();
                Ok((target, email))
            }
            Recipient::Phone(_) => Err(HostedError::NotFound),
        }
    }

    /// One record per object and address: a code for one mandate proves nothing for another.
    fn subject(purpose: &Purpose, email: &EmailAddress) -> String {
        format!(
            "{}:{}:{}",
            purpose.kind.as_str(),
            purpose.id.as_deref().unwrap_or_default(),
            email.as_str().to_ascii_lowercase()
        )
    }

    /// What the page shows: the context the passkey will commit to, and who is asked.
    pub async fn view(&self, purpose: &Purpose) -> Result<PageView, HostedError> {
        let (target, email) = self.target(purpose).await?;
        Ok(PageView {
            email,
            context: target.context,
        })
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
                    subject: Self::subject(purpose, &email),
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

    /// Checks a code; a right one returns the page token. The attempt is taken before the
    /// comparison, so concurrent guesses never exceed the attempts.
    pub async fn verify_code(&self, purpose: &Purpose, code: &str) -> Result<String, HostedError> {
        let (_, email) = self.target(purpose).await?;
        let subject = Self::subject(purpose, &email);
        let now = self.now();
        let taken = self
            .ports
            .confirmations
            .take_attempt(&subject, now, now.plus(self.settings.lock))
            .await?;
        let (code_hash, attempts_left) = match taken {
            Taken::Code {
                code_hash,
                attempts_left,
            } => (code_hash, attempts_left),
            Taken::NoCode => return Err(HostedError::WrongCode { attempts_left: 0 }),
            Taken::Locked { until } => {
                return Err(HostedError::Locked {
                    retry_after_secs: retry_after(until, now),
                });
            }
        };
        let given = self.ports.hasher.hex(CODE_HASH, code.trim().as_bytes());
        if !constant_time_eq(given.as_bytes(), code_hash.as_bytes()) {
            return Err(if attempts_left == 0 {
                HostedError::Locked {
                    retry_after_secs: self.settings.lock.as_secs(),
                }
            } else {
                HostedError::WrongCode { attempts_left }
            });
        }
        let token = hex::encode(self.ports.random.bytes::<32>());
        let confirmed = self
            .ports
            .confirmations
            .confirm(
                &subject,
                &code_hash,
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

    /// The subject's record if `token` is its live page token.
    async fn confirmed(
        &self,
        purpose: &Purpose,
        token: &str,
    ) -> Result<(Target, EmailAddress, crate::ports::Confirmation, String), HostedError> {
        let (target, email) = self.target(purpose).await?;
        let subject = Self::subject(purpose, &email);
        let record = self
            .ports
            .confirmations
            .find(&subject)
            .await?
            .ok_or(HostedError::NoToken)?;
        let token_hash = self.ports.hasher.hex(TOKEN_HASH, token.as_bytes());
        let live = record.token_expires_at.is_some_and(|at| at > self.now());
        let matches = record
            .token_hash
            .as_deref()
            .is_some_and(|stored| constant_time_eq(stored.as_bytes(), token_hash.as_bytes()));
        if !(live && matches) {
            return Err(HostedError::NoToken);
        }
        Ok((target, email, record, token_hash))
    }

    /// The address a live page token confirmed (for what a page shows only after the code, such
    /// as a document to sign).
    pub async fn confirmed_address(
        &self,
        purpose: &Purpose,
        token: &str,
    ) -> Result<EmailAddress, HostedError> {
        Ok(self.confirmed(purpose, token).await?.1)
    }

    /// Step 2a: options for `navigator.credentials.create` — a passkey for this decision.
    pub async fn passkey_registration(
        &self,
        purpose: &Purpose,
        token: &str,
    ) -> Result<Value, HostedError> {
        let (_, email, record, token_hash) = self.confirmed(purpose, token).await?;
        let handle = hex::encode(self.ports.random.bytes::<16>());
        let started = self
            .ports
            .passkeys
            .start_registration(&handle, email.as_str(), email.as_str(), &[])
            .map_err(passkey_error)?;
        self.save(
            &record.subject,
            &token_hash,
            CeremonyStep {
                ceremony: started.state,
                passkey: None,
                passkey_counter: 0,
                context_hash: None,
            },
        )
        .await?;
        Ok(started.options)
    }

    /// Step 2b: keeps the new passkey and returns options for `navigator.credentials.get` over
    /// a challenge committing to the object's context as it is now.
    pub async fn passkey_assertion(
        &self,
        purpose: &Purpose,
        token: &str,
        registration: &Value,
    ) -> Result<AssertionStart, HostedError> {
        let (target, _, record, token_hash) = self.confirmed(purpose, token).await?;
        let state = record
            .ceremony
            .as_deref()
            .filter(|_| record.passkey.is_none())
            .ok_or_else(|| HostedError::Passkey("start the passkey registration first".into()))?;
        let passkey = self
            .ports
            .passkeys
            .finish_registration(state, registration)
            .map_err(passkey_error)?;
        let hash = context_hash(&target.context);
        let nonce = self.ports.random.bytes::<32>();
        let started = self
            .ports
            .passkeys
            .start_authentication(
                &[StoredPasskey {
                    passkey: &passkey.passkey,
                    counter: passkey.counter,
                }],
                derive_challenge(&nonce, &hash),
            )
            .map_err(passkey_error)?;
        self.save(
            &record.subject,
            &token_hash,
            CeremonyStep {
                ceremony: started.state,
                passkey: Some(passkey.passkey),
                passkey_counter: passkey.counter,
                context_hash: Some(hex::encode(hash)),
            },
        )
        .await?;
        Ok(AssertionStart {
            options: started.options,
            context: target.context,
            context_hash: hex::encode(hash),
            nonce: hex::encode(nonce),
        })
    }

    async fn save(
        &self,
        subject: &str,
        token_hash: &str,
        step: CeremonyStep,
    ) -> Result<(), HostedError> {
        let saved = self
            .ports
            .confirmations
            .save_ceremony(subject, token_hash, self.now(), &step)
            .await?;
        if saved {
            Ok(())
        } else {
            Err(HostedError::NoToken)
        }
    }

    /// Step 3: the decision, once per token. With `passkey_required`, the assertion must verify
    /// against the challenge of step 2b; the domain refuses it if the object changed since.
    pub async fn decide(
        &self,
        purpose: &Purpose,
        token: &str,
        answer: Answer<'_>,
        also: &AlsoFn<'_>,
    ) -> Result<String, HostedError> {
        let (_, email, record, token_hash) = self.confirmed(purpose, token).await?;
        let Answer {
            decision,
            assertion,
            passkey_required,
            client,
        } = answer;
        let passkey = match (assertion, &record.ceremony, &record.context_hash) {
            (Some(assertion), Some(state), Some(_)) if record.passkey.is_some() => {
                self.ports
                    .passkeys
                    .finish_authentication(state, assertion)
                    .map_err(passkey_error)?;
                true
            }
            _ if passkey_required => {
                return Err(HostedError::Passkey(
                    "confirm with your passkey before deciding".into(),
                ));
            }
            _ => false,
        };
        // One decision per token, whatever happens next.
        if !self
            .ports
            .confirmations
            .consume(&record.subject, &token_hash)
            .await?
        {
            return Err(HostedError::NoToken);
        }
        let approver = Approver {
            via: ApprovedVia::HostedPage {
                email,
                passkey,
                ip_address: client.ip_address,
                user_agent: client.user_agent,
            },
            context_hash: record.context_hash.filter(|_| passkey),
        };
        let now = self.now();
        self.ports
            .approvals
            .decide(purpose, decision, &approver, also)
            .await
            .map_err(|error| match error {
                TargetError::Quota(quota) => HostedError::Quota {
                    quota,
                    retry_after_secs: quota.retry_after_secs(now),
                },
                other => other.into(),
            })
    }

    /// Housekeeping: records whose code and token are both long gone.
    pub async fn forget_expired(&self) -> Result<u64, HostedError> {
        let before = self
            .now()
            .minus(self.settings.lock.max(self.settings.token_ttl));
        Ok(self.ports.confirmations.forget_before(before).await?)
    }
}

fn passkey_error(error: PasskeyError) -> HostedError {
    match error {
        PasskeyError::Refused(reason) | PasskeyError::Malformed(reason) => {
            HostedError::Passkey(reason)
        }
        other => HostedError::Unavailable(Box::new(other)),
    }
}
