//! A merchant's shared request budget, as pure arithmetic (ADR 0029).
//!
//! The per-minute limit is a GCRA (generic cell rate algorithm): a request costs one emission
//! interval `T = 60 s / limit` of "theoretical arrival time" (`tat`); the bucket admits while
//! `tat` stays within one minute ahead of now. So a fresh bucket admits `limit` requests at
//! once and then one every `T` — never the doubled burst of a fixed window at its boundary.
//! The per-day limit counts requests per UTC calendar day.
//!
//! Server processes do not write this state per request: each *leases* up to a slice of it
//! (a fifth of the per-minute limit) in one compare-and-swap, spends the slice locally, and
//! gives back what it did not spend with its next lease. [`decide`] is the whole judgement;
//! a store reads the state, calls it, and writes the result only if the state is unchanged.

use idconsent_kernel::Timestamp;

use crate::plan::RateLimits;

const MINUTE_MICROS: i64 = 60_000_000;
const DAY_MILLIS: i64 = 86_400_000;

/// The stored budget of one merchant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BudgetState {
    /// The GCRA's theoretical arrival time, in microseconds since the epoch.
    pub tat_micros: i64,
    /// The UTC day `day_used` counts (days since the epoch).
    pub day: i64,
    /// Requests leased on that day.
    pub day_used: u64,
}

/// Which limit a refusal or a header speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Minute,
    Day,
    Concurrent,
}

impl Window {
    /// The envelope `details` field naming the limit.
    pub fn field(self) -> &'static str {
        match self {
            Window::Minute => "requestsPerMinute",
            Window::Day => "requestsPerDay",
            Window::Concurrent => "concurrent",
        }
    }
}

/// One process asking for part of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRequest {
    pub now: Timestamp,
    pub limits: RateLimits,
    /// How many requests the process wants to be able to admit (at least 1).
    pub want: u64,
    /// Unspent requests of the process's previous lease, given back.
    pub returning: u64,
    /// The UTC day of that previous lease: a day counter only takes back its own day's.
    pub returning_day: i64,
}

/// The judgement of a [`LeaseRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseDecision {
    /// The state to store.
    pub state: BudgetState,
    /// Requests the process may now admit (0: refused).
    pub granted: u64,
    /// Requests still free in the per-minute bucket after this grant.
    pub minute_free: u64,
    /// Requests still free today after this grant; `None` when unlimited.
    pub day_free: Option<u64>,
    /// When nothing was granted: the limit that refused, and how long until one request fits.
    pub refused: Option<(Window, u64)>,
}

/// The UTC day `at` falls in (days since the epoch).
pub fn day_of(at: Timestamp) -> i64 {
    at.as_millis().div_euclid(DAY_MILLIS)
}

/// Milliseconds from `at` to the next UTC midnight (at least 1).
pub fn millis_to_next_day(at: Timestamp) -> u64 {
    let next = (day_of(at) + 1) * DAY_MILLIS;
    u64::try_from(next - at.as_millis()).unwrap_or(1).max(1)
}

/// The GCRA emission interval of a per-minute limit, in microseconds (rounded down, so the
/// bucket is never stricter than the limit; grants are capped at the limit as well).
pub fn interval_micros(per_minute: u64) -> i64 {
    let per_minute = i64::try_from(per_minute.max(1)).unwrap_or(i64::MAX);
    (MINUTE_MICROS / per_minute).max(1)
}

/// Requests the per-minute bucket admits at `now_micros` given its `tat`.
pub fn minute_free(tat_micros: i64, now_micros: i64, per_minute: u64) -> u64 {
    let base = tat_micros.max(now_micros);
    let room = now_micros + MINUTE_MICROS - base;
    u64::try_from(room / interval_micros(per_minute))
        .unwrap_or(0)
        .min(per_minute)
}

/// Judges a lease: takes back what is returned, then grants as much of `want` as both the
/// per-minute bucket and the day allow.
pub fn decide(state: BudgetState, request: &LeaseRequest) -> LeaseDecision {
    let limits = request.limits;
    let interval = interval_micros(limits.per_minute);
    let now_micros = request.now.as_millis().saturating_mul(1000);
    let today = day_of(request.now);
    let mut state = state;
    if state.day != today {
        state.day = today;
        state.day_used = 0;
    }
    if request.returning > 0 {
        let returned = i64::try_from(request.returning)
            .unwrap_or(i64::MAX)
            .saturating_mul(interval);
        if state.tat_micros > now_micros {
            state.tat_micros = state.tat_micros.saturating_sub(returned).max(now_micros);
        }
        if request.returning_day == today {
            state.day_used = state.day_used.saturating_sub(request.returning);
        }
    }
    let minute = minute_free(state.tat_micros, now_micros, limits.per_minute);
    let day = limits
        .per_day
        .map(|per_day| per_day.saturating_sub(state.day_used));
    let granted = request.want.max(1).min(minute).min(day.unwrap_or(u64::MAX));
    if granted > 0 {
        let spent = i64::try_from(granted)
            .unwrap_or(i64::MAX)
            .saturating_mul(interval);
        state.tat_micros = state.tat_micros.max(now_micros).saturating_add(spent);
        state.day_used += granted;
    }
    let refused = (granted == 0).then(|| {
        if day == Some(0) {
            (Window::Day, millis_to_next_day(request.now))
        } else {
            // The next request fits once `tat - interval` is within a minute of now.
            let wait = state.tat_micros.max(now_micros) + interval - MINUTE_MICROS - now_micros;
            let millis = u64::try_from(wait).unwrap_or(0).div_ceil(1000).max(1);
            (Window::Minute, millis)
        }
    });
    LeaseDecision {
        state,
        granted,
        minute_free: minute - granted,
        day_free: day.map(|day| day - granted),
        refused,
    }
}

/// The slice a process leases at a time: a fifth of the per-minute limit (CONTRACT §7: "a
/// process holds at most a fifth of a per-minute limit at a time"), and of the daily one.
pub fn slice(limits: &RateLimits) -> u64 {
    let minute = (limits.per_minute / 5).max(1);
    match limits.per_day {
        Some(per_day) => minute.min((per_day / 5).max(1)),
        None => minute,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const FREE: RateLimits = RateLimits {
        per_minute: 60,
        per_day: Some(1_000),
        concurrent: 5,
    };

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_millis(1_790_000_000_000 + millis)
    }

    fn lease(state: BudgetState, now: Timestamp, want: u64) -> LeaseDecision {
        decide(
            state,
            &LeaseRequest {
                now,
                limits: FREE,
                want,
                returning: 0,
                returning_day: 0,
            },
        )
    }

    #[test]
    fn a_fresh_bucket_admits_the_limit_at_once_then_one_per_interval() {
        let first = lease(BudgetState::default(), at(0), 60);
        assert_eq!(first.granted, 60);
        assert_eq!(first.minute_free, 0);
        let refused = lease(first.state, at(0), 1);
        assert_eq!(refused.granted, 0);
        assert_eq!(refused.refused, Some((Window::Minute, 1_000)));
        assert_eq!(refused.state, first.state, "a refusal changes nothing");
        assert_eq!(lease(first.state, at(999), 1).granted, 0);
        let one = lease(first.state, at(1_000), 5);
        assert_eq!(one.granted, 1);
        assert_eq!(lease(first.state, at(30_000), 100).granted, 30);
    }

    #[test]
    fn returned_requests_are_free_again() {
        let first = lease(BudgetState::default(), at(0), 60);
        let back = decide(
            first.state,
            &LeaseRequest {
                now: at(0),
                limits: FREE,
                want: 12,
                returning: 20,
                returning_day: day_of(at(0)),
            },
        );
        assert_eq!(back.granted, 12);
        assert_eq!(back.minute_free, 8);
        assert_eq!(back.state.day_used, 52);
    }

    #[test]
    fn the_day_limit_refuses_until_midnight() {
        let limits = RateLimits {
            per_minute: 1_000,
            per_day: Some(10),
            concurrent: 5,
        };
        let request = |now| LeaseRequest {
            now,
            limits,
            want: 100,
            returning: 0,
            returning_day: 0,
        };
        let noon = Timestamp::parse_rfc3339("2026-11-26T12:00:00.000Z").unwrap();
        let first = decide(BudgetState::default(), &request(noon));
        assert_eq!((first.granted, first.day_free), (10, Some(0)));
        let refused = decide(first.state, &request(noon));
        assert_eq!(refused.refused, Some((Window::Day, 12 * 3_600_000)));
        let tomorrow = Timestamp::parse_rfc3339("2026-11-27T00:00:00.000Z").unwrap();
        assert_eq!(decide(first.state, &request(tomorrow)).granted, 10);
    }

    #[test]
    fn slices_are_a_fifth_of_the_tightest_limit() {
        assert_eq!(slice(&FREE), 12);
        let enterprise = RateLimits {
            per_minute: 10_000,
            per_day: None,
            concurrent: 500,
        };
        assert_eq!(slice(&enterprise), 2_000);
        let tiny = RateLimits {
            per_minute: 3,
            per_day: Some(2),
            concurrent: 1,
        };
        assert_eq!(slice(&tiny), 1);
    }

    proptest! {
        /// However requests arrive and whatever processes lease and give back, no minute-long
        /// window admits more than the limit plus what the bucket refilled in it, and requests
        /// spaced one interval apart are never refused.
        #[test]
        fn no_window_admits_more_than_the_bucket_allows(
            per_minute in 1u64..2_000,
            steps in proptest::collection::vec((0i64..3_000, 1u64..50, 0u64..50), 1..200),
        ) {
            let limits = RateLimits { per_minute, per_day: None, concurrent: 1 };
            let interval = interval_micros(per_minute);
            let mut state = BudgetState::default();
            let mut now = 0i64;
            let mut grants: Vec<(i64, u64)> = Vec::new();
            for (advance, want, returning) in steps {
                now += advance;
                // Give back only what was granted and not yet returned.
                let outstanding: u64 = grants.iter().map(|(_, n)| *n).sum();
                let returning = returning.min(outstanding).min(grants.last().map_or(0, |g| g.1));
                let decision = decide(state, &LeaseRequest {
                    now: at(now), limits, want, returning, returning_day: day_of(at(now)),
                });
                if let Some(last) = grants.last_mut().filter(|_| returning > 0) {
                    last.1 -= returning;
                }
                prop_assert!(decision.granted <= want);
                prop_assert!(decision.granted <= per_minute);
                state = decision.state;
                grants.push((now, decision.granted));
            }
            // In any window of one minute: at most `per_minute` at its start plus one per
            // interval that passed in it.
            for (index, (start, _)) in grants.iter().enumerate() {
                let in_window: u64 = grants[index..]
                    .iter()
                    .take_while(|(t, _)| *t < start + 60_000)
                    .map(|(_, n)| *n)
                    .sum();
                let refill = u64::try_from(60_000_000 / interval).unwrap_or(u64::MAX);
                prop_assert!(in_window <= per_minute + refill, "{in_window} in a minute");
            }
        }

        #[test]
        fn requests_at_the_rate_are_never_refused(per_minute in 1u64..600, count in 1usize..300) {
            let limits = RateLimits { per_minute, per_day: None, concurrent: 1 };
            // One interval, rounded up to whole milliseconds (the clock's unit).
            let interval_millis = (interval_micros(per_minute) + 999) / 1000;
            let mut state = BudgetState::default();
            for step in 0..count {
                let now = at(i64::try_from(step).unwrap() * interval_millis);
                let decision = decide(state, &LeaseRequest {
                    now, limits, want: 1, returning: 0, returning_day: 0,
                });
                prop_assert_eq!(decision.granted, 1);
                state = decision.state;
            }
        }

        #[test]
        fn a_refusal_names_a_wait_after_which_one_request_fits(
            per_minute in 1u64..2_000,
            burst in 1u64..4_000,
        ) {
            let limits = RateLimits { per_minute, per_day: None, concurrent: 1 };
            let request = |now, want| LeaseRequest { now, limits, want, returning: 0, returning_day: 0 };
            let full = decide(BudgetState::default(), &request(at(0), burst));
            let next = decide(full.state, &request(at(0), 1));
            if let Some((Window::Minute, wait)) = next.refused {
                let after = decide(full.state, &request(at(i64::try_from(wait).unwrap()), 1));
                prop_assert_eq!(after.granted, 1);
            } else {
                prop_assert!(burst < per_minute);
            }
        }
    }
}
