//! The steps after the emailed code: the passkey made and asserted in the browser, and the one
//! decision a page token buys. Each of them names what the page showed (its hash): a page that
//! showed anything but the object as it is now decides nothing and is told to reload.

use idconsent_approval::commitment::derive_challenge;
use idconsent_approval::{AlsoFn, ApprovedVia, Approver, Purpose, Target, TargetError};
use idconsent_enduser::ports::{PasskeyError, StoredPasskey};
use idconsent_kernel::{EmailAddress, constant_time_eq};
use serde_json::Value;

use crate::ports::{CeremonyStep, Confirmation};
use crate::service::{Answer, AssertionStart, HostedApprovals, HostedError, TOKEN_HASH};

impl HostedApprovals {
    /// The subject's record if `token` is its live page token.
    async fn confirmed(
        &self,
        purpose: &Purpose,
        token: &str,
    ) -> Result<(Target, EmailAddress, Confirmation, String), HostedError> {
        let (target, email) = self.target(purpose).await?;
        let subject = Self::subject(purpose, &target, &email);
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
    /// a challenge committing to the object's context as it is now — only when that is what the
    /// page showed (`shown`, the page's hash): else `Changed`, and the registration may be
    /// finished again from the reloaded page.
    pub async fn passkey_assertion(
        &self,
        purpose: &Purpose,
        token: &str,
        registration: &Value,
        shown: &str,
    ) -> Result<AssertionStart, HostedError> {
        let (target, _, record, token_hash) = self.confirmed(purpose, token).await?;
        Self::check_shown(&target, shown)?;
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
        let hash = idconsent_approval::commitment::context_hash(&target.context);
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

    /// Step 3: the decision, once per token, on a page that showed the object as it is now
    /// (else `Changed`, and the token is kept for the reloaded page). When the target requires a
    /// passkey, the assertion must verify against the challenge of step 2b. The target refuses it if the
    /// object changed after this check (it is handed the context hash agreed to).
    pub async fn decide(
        &self,
        purpose: &Purpose,
        token: &str,
        answer: Answer<'_>,
        also: &AlsoFn<'_>,
    ) -> Result<String, HostedError> {
        let (target, email, record, token_hash) = self.confirmed(purpose, token).await?;
        let Answer {
            decision,
            shown,
            assertion,
            client,
        } = answer;
        Self::check_shown(&target, shown)?;
        let passkey = match (assertion, &record.ceremony, &record.context_hash) {
            (Some(assertion), Some(state), Some(_)) if record.passkey.is_some() => {
                self.ports
                    .passkeys
                    .finish_authentication(state, assertion)
                    .map_err(passkey_error)?;
                true
            }
            // The domain's rule: a mandate always, a signature when its request says so.
            _ if target.passkey_required => {
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
        // What the recipient agreed to: what the passkey signed, or what the page was just
        // checked to show.
        let agreed = if passkey {
            record.context_hash
        } else {
            Some(target.context_hash())
        };
        let approver = Approver {
            via: ApprovedVia::HostedPage {
                email,
                passkey,
                ip_address: client.ip_address,
                user_agent: client.user_agent,
            },
            context_hash: agreed,
        };
        let canonical = Purpose::new(purpose.kind.clone(), target.canonical_id);
        let now = self.now();
        self.ports
            .approvals
            .decide(&canonical, decision, &approver, also)
            .await
            .map_err(|error| match error {
                TargetError::Quota(quota) => HostedError::Quota {
                    quota,
                    retry_after_secs: quota.retry_after_secs(now),
                },
                other => other.into(),
            })
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
