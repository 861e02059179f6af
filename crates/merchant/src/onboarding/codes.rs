//! The emailed link and the SMS code: sending, resending at most once per interval, and
//! verifying.

use idconsent_kernel::id::{MerchantId, TypedId};
use idconsent_notification::{Address, NewMessage};

use crate::credentials::generate_link_token;
use crate::error::MerchantError;
use crate::model::{Merchant, Permission};
use crate::ports::{CodePurpose, OneTimeCode};
use crate::service::{Actor, MerchantService};

impl MerchantService {
    /// Confirms the emailed link (no session needed). Single use, 24 hours.
    pub async fn verify_email_link(&self, token: &str) -> Result<Merchant, MerchantError> {
        let hash = self
            .ports
            .hasher
            .hex(CodePurpose::EmailVerification.as_str(), token.as_bytes());
        let code = self
            .ports
            .codes
            .find_by_hash(CodePurpose::EmailVerification, &hash)
            .await?
            .filter(|code| code.expires_at > self.now())
            .ok_or(MerchantError::InvalidLink)?;
        if !self
            .ports
            .codes
            .consume(code.purpose, &code.subject)
            .await?
        {
            return Err(MerchantError::InvalidLink);
        }
        let id = MerchantId::parse(&code.subject).map_err(|_| MerchantError::InvalidLink)?;
        self.ports
            .merchants
            .mark_email_verified(&id, self.now())
            .await?;
        self.load_merchant(&id).await
    }

    /// Sends a new email link, at most once a minute.
    pub async fn resend_email_link(&self, actor: &Actor) -> Result<(), MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.email_verified_at.is_some() {
            return Err(MerchantError::Conflict(
                "The email is already verified".into(),
            ));
        }
        self.send_email_link(&merchant, Resend::AfterCoolDown).await
    }

    /// Checks the SMS code: 10 minutes, 5 wrong guesses, single use.
    pub async fn verify_phone(&self, actor: &Actor, code: &str) -> Result<Merchant, MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.phone_verified_at.is_some() {
            return Err(MerchantError::Conflict(
                "The phone number is already verified".into(),
            ));
        }
        let subject = merchant.id.as_str();
        // The guess is counted before it is compared, atomically: parallel guesses get no more
        // tries than sequential ones.
        let stored = self
            .ports
            .codes
            .take_attempt(CodePurpose::PhoneVerification, subject, self.now())
            .await?
            .ok_or(MerchantError::InvalidCode)?;
        let presented = self.ports.hasher.hex(
            CodePurpose::PhoneVerification.as_str(),
            code.trim().as_bytes(),
        );
        if presented != stored.code_hash {
            return Err(MerchantError::InvalidCode);
        }
        if !self
            .ports
            .codes
            .consume(CodePurpose::PhoneVerification, subject)
            .await?
        {
            return Err(MerchantError::InvalidCode);
        }
        self.ports
            .merchants
            .mark_phone_verified(&merchant.id, self.now())
            .await?;
        self.load_merchant(&merchant.id).await
    }

    /// Sends a new SMS code, at most once a minute.
    pub async fn resend_phone_code(&self, actor: &Actor) -> Result<(), MerchantError> {
        actor.require(Permission::ManageAccount)?;
        let merchant = self.load_merchant(&actor.user.merchant_id).await?;
        if merchant.phone_verified_at.is_some() {
            return Err(MerchantError::Conflict(
                "The phone number is already verified".into(),
            ));
        }
        self.send_phone_code(&merchant, Resend::AfterCoolDown).await
    }

    pub(super) async fn send_email_link(
        &self,
        merchant: &Merchant,
        resend: Resend,
    ) -> Result<(), MerchantError> {
        let token = generate_link_token(self.ports.random.as_ref());
        self.store_code(
            CodePurpose::EmailVerification,
            merchant.id.as_str(),
            &token,
            self.settings.email_link_ttl,
            1,
            resend,
        )
        .await?;
        let link = format!("{}/verify-email?token={token}", self.settings.dashboard_url);
        self.ports
            .notifications
            .send(NewMessage {
                to: Address::Email(merchant.email.clone()),
                subject: "Confirm your email for idconsent".into(),
                body: format!(
                    "Hello {},\n\nConfirm the email address of {} by opening this link within 24 hours:\n\n{link}\n\nIf you did not register, ignore this message.",
                    merchant.contact_name, merchant.business_name
                ),
                code: None,
                link: Some(link),
            })
            .await
            .map_err(MerchantError::unavailable)?;
        Ok(())
    }

    pub(super) async fn send_phone_code(
        &self,
        merchant: &Merchant,
        resend: Resend,
    ) -> Result<(), MerchantError> {
        let code = self.ports.random.digits(6);
        self.store_code(
            CodePurpose::PhoneVerification,
            merchant.id.as_str(),
            &code,
            self.settings.phone_code_ttl,
            self.settings.code_attempts,
            resend,
        )
        .await?;
        self.ports
            .notifications
            .send(NewMessage {
                to: Address::Phone(merchant.phone.clone()),
                subject: "idconsent verification code".into(),
                body: format!(
                    "Your idconsent verification code is {code}. It expires in 10 minutes."
                ),
                code: Some(code),
                link: None,
            })
            .await
            .map_err(MerchantError::unavailable)?;
        Ok(())
    }

    /// Stores a new code, replacing the subject's current one. With `Resend::AfterCoolDown` the
    /// replacement is refused (`TooSoon`) while the current code is younger than the resend
    /// interval — decided by the store in one statement, so concurrent resends send one code.
    pub(crate) async fn store_code(
        &self,
        purpose: CodePurpose,
        subject: &str,
        secret: &str,
        ttl: std::time::Duration,
        attempts: u32,
        resend: Resend,
    ) -> Result<(), MerchantError> {
        let now = self.now();
        let code = OneTimeCode {
            purpose,
            subject: subject.to_owned(),
            code_hash: self.ports.hasher.hex(purpose.as_str(), secret.as_bytes()),
            expires_at: now.plus(ttl),
            attempts_left: attempts,
            created_at: now,
        };
        match resend {
            Resend::Always => self.ports.codes.put(&code).await?,
            Resend::AfterCoolDown => {
                let cutoff = now.minus(self.settings.resend_interval);
                if !self.ports.codes.put_unless_newer(&code, cutoff).await? {
                    return Err(self.too_soon(purpose, subject).await?);
                }
            }
        }
        Ok(())
    }

    /// The refusal of a resend, with how long until the current code is old enough.
    async fn too_soon(
        &self,
        purpose: CodePurpose,
        subject: &str,
    ) -> Result<MerchantError, MerchantError> {
        let now = self.now();
        let next_allowed = self
            .ports
            .codes
            .find(purpose, subject)
            .await?
            .map_or(now, |current| {
                current.created_at.plus(self.settings.resend_interval)
            });
        Ok(MerchantError::TooSoon {
            retry_after_secs: next_allowed.since(now).as_secs().max(1),
        })
    }
}

/// Whether a new code may replace one sent moments ago.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resend {
    /// A first send, or one the user cannot trigger in a loop (an invitation by an admin).
    Always,
    /// A resend the user asked for: at most one per resend interval.
    AfterCoolDown,
}
