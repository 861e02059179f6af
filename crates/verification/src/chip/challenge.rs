//! The active-authentication challenge (ICAO 9303-11 §6.1): 8 random bytes the server issues
//! to one application, which the chip signs. Fresh, bound and single use, it makes a recorded
//! answer worthless: a clone that replays an old signature answers the wrong challenge.

use std::time::Duration;

use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{RandomSource, Timestamp};

use super::evidence::CHALLENGE_LEN;

/// How long an issued challenge can be answered.
pub const CHIP_CHALLENGE_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// An issued challenge.
///
/// Rules (the store that keeps them, added with the HTTP route, must make the last one atomic):
/// - 8 bytes from the [`RandomSource`] port, never derived from anything a client sent;
/// - bound to the application it was issued to: another application cannot use it;
/// - answerable until `expires_at` (5 minutes after issue), not at or after it;
/// - single use: taking it for a verification and deleting it is one store operation, so
///   twenty concurrent submissions with the same challenge see it at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChipChallenge {
    application: ApplicationId,
    bytes: [u8; CHALLENGE_LEN],
    issued_at: Timestamp,
    expires_at: Timestamp,
}

/// Why an answered challenge was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChallengeRejection {
    #[error("the challenge was issued to another application")]
    WrongApplication,
    #[error("the challenge has expired")]
    Expired,
    #[error("the challenge does not match")]
    Mismatch,
}

impl ChipChallenge {
    pub fn issue(application: ApplicationId, random: &dyn RandomSource, now: Timestamp) -> Self {
        Self {
            application,
            bytes: random.bytes::<CHALLENGE_LEN>(),
            issued_at: now,
            expires_at: now.plus(CHIP_CHALLENGE_LIFETIME),
        }
    }

    /// A challenge as a store kept it.
    pub fn restore(
        application: ApplicationId,
        bytes: [u8; CHALLENGE_LEN],
        issued_at: Timestamp,
        expires_at: Timestamp,
    ) -> Self {
        Self {
            application,
            bytes,
            issued_at,
            expires_at,
        }
    }

    pub fn application(&self) -> &ApplicationId {
        &self.application
    }

    pub fn bytes(&self) -> &[u8; CHALLENGE_LEN] {
        &self.bytes
    }

    pub fn issued_at(&self) -> Timestamp {
        self.issued_at
    }

    pub fn expires_at(&self) -> Timestamp {
        self.expires_at
    }

    /// Whether `application` may answer with `presented` at `now`. A store calls this on the
    /// challenge it took; the verifier then checks the chip signed exactly these bytes.
    pub fn accepts(
        &self,
        application: &ApplicationId,
        presented: &[u8; CHALLENGE_LEN],
        now: Timestamp,
    ) -> Result<(), ChallengeRejection> {
        if &self.application != application {
            return Err(ChallengeRejection::WrongApplication);
        }
        if now >= self.expires_at {
            return Err(ChallengeRejection::Expired);
        }
        if &self.bytes != presented {
            return Err(ChallengeRejection::Mismatch);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idconsent_kernel::SeededRandom;
    use idconsent_kernel::id::TypedId;

    fn app(n: u8) -> ApplicationId {
        ApplicationId::parse(&format!("app_01JB0000000000000000000{n:03}")).unwrap()
    }

    #[test]
    fn a_challenge_is_accepted_by_its_application_until_it_expires() {
        let now = Timestamp::from_millis(1_800_000_000_000);
        let random = SeededRandom::new(3);
        let challenge = ChipChallenge::issue(app(1), &random, now);
        let bytes = *challenge.bytes();
        assert_eq!(challenge.accepts(&app(1), &bytes, now), Ok(()));
        let last = now
            .plus(CHIP_CHALLENGE_LIFETIME)
            .minus(Duration::from_millis(1));
        assert_eq!(challenge.accepts(&app(1), &bytes, last), Ok(()));
        assert_eq!(
            challenge.accepts(&app(1), &bytes, now.plus(CHIP_CHALLENGE_LIFETIME)),
            Err(ChallengeRejection::Expired)
        );
        assert_eq!(
            challenge.accepts(&app(2), &bytes, now),
            Err(ChallengeRejection::WrongApplication)
        );
        let mut other = bytes;
        other[7] ^= 1;
        assert_eq!(
            challenge.accepts(&app(1), &other, now),
            Err(ChallengeRejection::Mismatch)
        );
    }

    #[test]
    fn challenges_are_drawn_from_the_random_source() {
        let now = Timestamp::from_millis(0);
        let random = SeededRandom::new(9);
        let first = ChipChallenge::issue(app(1), &random, now);
        let second = ChipChallenge::issue(app(1), &random, now);
        assert_ne!(first.bytes(), second.bytes());
    }
}
