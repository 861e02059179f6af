//! Guessing the emailed code: each guess is taken — counted, atomically — before it is compared,
//! against two allowances. A code has a few attempts (the guess that uses the last one locks the
//! subject for a while), and across codes the subject has a fixed number of guesses in any
//! window of time (the guess that uses the last one locks it until the oldest of them leaves the
//! window): a resend gives a code new attempts, never the subject new guesses.
//!
//! The store reads a subject's [`GuessState`] under a lock, asks [`GuessPolicy::judge`], and
//! writes what the verdict says in the same transaction (ADR 0018).

use std::time::Duration;

use idconsent_kernel::Timestamp;

/// How long the guesses of a code and a subject lock it. (A code's attempts are given when it is
/// issued.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuessPolicy {
    /// How long the guess that uses a code's last attempt locks the subject.
    pub lock: Duration,
    /// Wrong guesses per subject in any `window`, across codes and resends.
    pub per_window: u32,
    pub window: Duration,
}

/// What the store keeps of a subject, as far as guessing goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuessState {
    /// The keyed hash of the live code; `None` once used (or never sent).
    pub code_hash: Option<String>,
    pub code_expires_at: Timestamp,
    pub attempts_left: u32,
    pub locked_until: Option<Timestamp>,
    /// When the guesses of the window were taken, oldest first. A right guess is given back
    /// ([`give_back`]), so these are the wrong ones (and those being compared).
    pub guesses: Vec<Timestamp>,
}

/// What taking a guess decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The guess was taken (`state` is what the store keeps): compare against `code_hash`.
    Code {
        code_hash: String,
        /// Guesses left after this one: the fewer of the code's attempts and the window's.
        attempts_left: u32,
        /// The lock this guess set, if it used the last attempt of either allowance.
        locked_until: Option<Timestamp>,
        /// When it was taken: [`give_back`] returns it if the code was right.
        taken_at: Timestamp,
    },
    /// No live code: never sent, used, expired, or out of attempts. Nothing was taken.
    NoCode,
    /// Locked until then; nothing was taken.
    Locked { until: Timestamp },
}

impl GuessPolicy {
    /// Takes one guess from `state` at `now`: the new state to keep, and the verdict. A refused
    /// guess changes nothing (`None`).
    pub fn judge(&self, state: &GuessState, now: Timestamp) -> (Option<GuessState>, Taken) {
        if let Some(until) = state.locked_until.filter(|until| *until > now) {
            return (None, Taken::Locked { until });
        }
        let window_start = now.minus(self.window);
        let mut guesses: Vec<Timestamp> = state
            .guesses
            .iter()
            .copied()
            .filter(|at| *at > window_start)
            .collect();
        guesses.sort();
        let per_window = usize::try_from(self.per_window).unwrap_or(usize::MAX);
        if guesses.len() >= per_window {
            // A full window is also locked by the guess that filled it; this holds without it.
            return (
                None,
                Taken::Locked {
                    until: self.window_end(&guesses),
                },
            );
        }
        let code_hash = match &state.code_hash {
            Some(hash) if state.attempts_left > 0 && state.code_expires_at > now => hash.clone(),
            _ => return (None, Taken::NoCode),
        };
        guesses.push(now);
        let attempts_left = state.attempts_left - 1;
        let window_left = per_window.saturating_sub(guesses.len());
        let mut locked_until = (attempts_left == 0).then(|| now.plus(self.lock));
        if window_left == 0 {
            let window_end = self.window_end(&guesses);
            locked_until = Some(locked_until.map_or(window_end, |lock| lock.max(window_end)));
        }
        let kept = GuessState {
            code_hash: state.code_hash.clone(),
            code_expires_at: state.code_expires_at,
            attempts_left,
            locked_until,
            guesses,
        };
        let taken = Taken::Code {
            code_hash,
            attempts_left: attempts_left.min(u32::try_from(window_left).unwrap_or(u32::MAX)),
            locked_until,
            taken_at: now,
        };
        (Some(kept), taken)
    }

    /// When the oldest guess of a full window leaves it.
    fn window_end(&self, guesses: &[Timestamp]) -> Timestamp {
        let oldest = guesses
            .first()
            .copied()
            .unwrap_or(Timestamp::from_millis(0));
        oldest.plus(self.window)
    }
}

/// Gives back the guess taken at `taken_at` (a right code is not a wrong guess), if it is still
/// counted.
pub fn give_back(guesses: &mut Vec<Timestamp>, taken_at: Timestamp) {
    if let Some(index) = guesses.iter().position(|at| *at == taken_at) {
        guesses.remove(index);
    }
}

/// The guesses as a store keeps them in one text column: milliseconds, comma-separated.
pub fn encode_guesses(guesses: &[Timestamp]) -> String {
    guesses
        .iter()
        .map(|at| at.as_millis().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// [`encode_guesses`] read back; what does not parse is not a guess.
pub fn decode_guesses(text: &str) -> Vec<Timestamp> {
    text.split(',')
        .filter_map(|millis| millis.trim().parse::<i64>().ok())
        .map(Timestamp::from_millis)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const PER_CODE: u32 = 5;
    const POLICY: GuessPolicy = GuessPolicy {
        lock: Duration::from_secs(900),
        per_window: 10,
        window: Duration::from_secs(24 * 3600),
    };

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_millis(secs * 1000)
    }

    fn code(expires: i64) -> GuessState {
        GuessState {
            code_hash: Some("h".into()),
            code_expires_at: at(expires),
            attempts_left: PER_CODE,
            locked_until: None,
            guesses: Vec::new(),
        }
    }

    fn take(state: &GuessState, now: Timestamp) -> (GuessState, Taken) {
        let (kept, taken) = POLICY.judge(state, now);
        (kept.unwrap_or_else(|| panic!("refused: {taken:?}")), taken)
    }

    #[test]
    fn the_last_attempt_of_a_code_locks_for_a_while() {
        let mut state = code(600);
        for left in (1..5).rev() {
            let (kept, taken) = take(&state, at(1));
            assert!(
                matches!(taken, Taken::Code { attempts_left, locked_until: None, .. } if attempts_left == left)
            );
            state = kept;
        }
        let (kept, taken) = take(&state, at(2));
        assert!(
            matches!(taken, Taken::Code { attempts_left: 0, locked_until: Some(until), .. } if until == at(902))
        );
        assert_eq!(
            POLICY.judge(&kept, at(3)),
            (None, Taken::Locked { until: at(902) })
        );
        // The lock over and no attempts left: no code to guess.
        assert_eq!(POLICY.judge(&kept, at(903)), (None, Taken::NoCode));
    }

    #[test]
    fn a_resend_gives_the_code_attempts_but_the_window_counts_on() {
        let mut state = code(600);
        for _ in 0..4 {
            state = take(&state, at(1)).0;
        }
        // A new code: five attempts again, six guesses left in the window.
        state.attempts_left = PER_CODE;
        for _ in 0..4 {
            state = take(&state, at(100)).0;
        }
        state.attempts_left = PER_CODE;
        let (kept, taken) = take(&state, at(200));
        assert!(matches!(
            taken,
            Taken::Code {
                attempts_left: 1,
                locked_until: None,
                ..
            }
        ));
        // The tenth guess locks until the first one is a day old, though the code has attempts.
        let (kept, taken) = take(&kept, at(201));
        let day_after_first = at(1 + 24 * 3600);
        assert!(
            matches!(taken, Taken::Code { attempts_left: 0, locked_until: Some(until), .. } if until == day_after_first)
        );
        assert_eq!(kept.attempts_left, 3);
        assert_eq!(
            POLICY.judge(&kept, at(5000)),
            (
                None,
                Taken::Locked {
                    until: day_after_first
                }
            )
        );
        // Even with the lock lifted by someone, a full window refuses.
        let mut unlocked = kept.clone();
        unlocked.locked_until = None;
        assert_eq!(
            POLICY.judge(&unlocked, at(5000)),
            (
                None,
                Taken::Locked {
                    until: day_after_first
                }
            )
        );
        // A day after the first four, they leave the window: guesses again.
        let mut later = kept;
        later.code_expires_at = at(2 * 24 * 3600);
        let (_, taken) = take(&later, day_after_first);
        assert!(matches!(
            taken,
            Taken::Code {
                attempts_left: 2,
                ..
            }
        ));
    }

    #[test]
    fn a_right_guess_is_given_back() {
        let mut state = code(600);
        state.guesses = (0..9).map(at).collect();
        let (mut kept, taken) = take(&state, at(10));
        let Taken::Code {
            locked_until: Some(_),
            taken_at,
            ..
        } = taken
        else {
            panic!("{taken:?}")
        };
        give_back(&mut kept.guesses, taken_at);
        assert_eq!(kept.guesses, (0..9).map(at).collect::<Vec<_>>());
        give_back(&mut kept.guesses, at(99));
        assert_eq!(kept.guesses.len(), 9);
    }

    #[test]
    fn an_expired_or_used_code_takes_nothing() {
        assert_eq!(POLICY.judge(&code(10), at(10)), (None, Taken::NoCode));
        let mut used = code(600);
        used.code_hash = None;
        assert_eq!(POLICY.judge(&used, at(1)), (None, Taken::NoCode));
    }

    #[test]
    fn guesses_round_trip_through_text() {
        let guesses = vec![at(1), at(2), Timestamp::from_millis(1_763_719_200_123)];
        assert_eq!(decode_guesses(&encode_guesses(&guesses)), guesses);
        assert!(decode_guesses("").is_empty());
        assert_eq!(
            decode_guesses("5,x,7"),
            vec![Timestamp::from_millis(5), Timestamp::from_millis(7)]
        );
    }
}
