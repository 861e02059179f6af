//! Sign-in: attempts are counted before the password is checked, and lock the member out.

use idconsent_kernel::EmailAddress;

use crate::error::MerchantError;
use crate::login::LoginAdmission;
use crate::model::UserStatus;
use crate::service::{MerchantService, SessionToken};

impl MerchantService {
    /// Signs a member in. Ten failures in a row lock the member out for 15 minutes; an
    /// unknown email costs as much time as a wrong password.
    pub async fn login(&self, email: &str, password: &str) -> Result<SessionToken, MerchantError> {
        let Some(user) = (match EmailAddress::parse(email) {
            Ok(email) => self.ports.team.find_by_email(&email).await?,
            Err(_) => None,
        }) else {
            self.ports.passwords.verify_dummy(password).await?;
            return Err(MerchantError::InvalidCredentials);
        };
        let now = self.now();
        // Taken before the (slow) password check, so parallel guesses queue on the count.
        let policy = self.settings.login_policy();
        if let LoginAdmission::Refused { until } = self
            .ports
            .team
            .take_login_attempt(&user.id, policy, now)
            .await?
        {
            return Err(MerchantError::LockedOut {
                retry_after_secs: until.since(now).as_secs().max(1),
            });
        }
        let verified = match (&user.password_hash, user.status) {
            (Some(hash), UserStatus::Active) => self.ports.passwords.verify(password, hash).await?,
            _ => {
                self.ports.passwords.verify_dummy(password).await?;
                false
            }
        };
        if !verified {
            return Err(MerchantError::InvalidCredentials);
        }
        self.ports.team.clear_failed_logins(&user.id).await?;
        self.issue_session(&user)
    }
}
