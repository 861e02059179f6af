//! Login attempts: each one is taken — counted, atomically — before the password is checked,
//! so a burst of parallel guesses gets no more tries than the same guesses one after another.

use std::time::Duration;

use idconsent_kernel::Timestamp;

/// A member's login attempts since the last success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginAttempts {
    /// Attempts taken since the last success or the last lock-out.
    pub taken: u32,
    /// Set by the attempt that used the last try; refuses attempts until then.
    pub locked_until: Option<Timestamp>,
}

/// How many attempts a member gets before a lock-out, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoginPolicy {
    pub max_attempts: u32,
    pub lockout: Duration,
}

/// What taking an attempt decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginAdmission {
    /// The password may be checked; `state` is what the store keeps.
    Admitted { state: LoginAttempts },
    /// Locked out until then; nothing changes.
    Refused { until: Timestamp },
}

impl LoginPolicy {
    /// Takes one attempt from `current` at `now`. The attempt that uses the last try is still
    /// admitted (its password may be right) and sets the lock; an expired lock starts a fresh
    /// count.
    pub fn judge(&self, current: LoginAttempts, now: Timestamp) -> LoginAdmission {
        if let Some(until) = current.locked_until.filter(|until| *until > now) {
            return LoginAdmission::Refused { until };
        }
        let before = if current.locked_until.is_some() {
            0
        } else {
            current.taken
        };
        let taken = before.saturating_add(1);
        let locked_until = (taken >= self.max_attempts).then(|| now.plus(self.lockout));
        LoginAdmission::Admitted {
            state: LoginAttempts {
                taken,
                locked_until,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: LoginPolicy = LoginPolicy {
        max_attempts: 3,
        lockout: Duration::from_secs(900),
    };

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_millis(secs * 1000)
    }

    fn take(state: LoginAttempts, now: Timestamp) -> LoginAttempts {
        match POLICY.judge(state, now) {
            LoginAdmission::Admitted { state } => state,
            LoginAdmission::Refused { until } => panic!("refused until {until:?}"),
        }
    }

    const FRESH: LoginAttempts = LoginAttempts {
        taken: 0,
        locked_until: None,
    };

    #[test]
    fn the_attempt_that_uses_the_last_try_is_admitted_and_locks() {
        let one = take(FRESH, at(0));
        let two = take(one, at(1));
        assert_eq!((two.taken, two.locked_until), (2, None));
        let three = take(two, at(2));
        assert_eq!((three.taken, three.locked_until), (3, Some(at(902))));
        assert_eq!(
            POLICY.judge(three, at(3)),
            LoginAdmission::Refused { until: at(902) }
        );
    }

    #[test]
    fn a_refused_attempt_changes_nothing_and_an_expired_lock_starts_afresh() {
        let locked = LoginAttempts {
            taken: 3,
            locked_until: Some(at(100)),
        };
        assert_eq!(
            POLICY.judge(locked, at(99)),
            LoginAdmission::Refused { until: at(100) }
        );
        let after = take(locked, at(100));
        assert_eq!((after.taken, after.locked_until), (1, None));
    }
}
