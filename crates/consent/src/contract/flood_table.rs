//! The flood rules (CONTRACT §4) as one table of cases, run through the port on every adapter.
//!
//! The in-memory fake and SQLite judge with [`FloodLimits`] in Rust; PostgreSQL counts in
//! PL/pgSQL (`idc_create_consent_sessions`, ADR 0034), which repeats which sessions count and
//! where the boundaries are. The same table, with its edges to the millisecond, runs against
//! each, so the two copies of the rule cannot drift apart unnoticed.

use std::time::Duration;

use idconsent_kernel::Environment;
use idconsent_kernel::id::ApplicationId;
use idconsent_webhook::Effects;

use super::{Stores, at, ids, phone, session};
use crate::model::SessionStatus;
use crate::ports::{CreateError, CreateRefused, FloodLimits};

/// A session the recipient already has when the case's create arrives.
#[derive(Debug, Clone, Copy)]
struct Prior {
    /// `true`: from the creating application; `false`: from another one.
    same_application: bool,
    same_environment: bool,
    created_ms: i64,
    /// Decided (approved or rejected) just after its creation, or still pending.
    decided: Option<SessionStatus>,
}

const fn pending(same_application: bool, created_ms: i64) -> Prior {
    Prior {
        same_application,
        same_environment: true,
        created_ms,
        decided: None,
    }
}

const fn decided(same_application: bool, created_ms: i64, status: SessionStatus) -> Prior {
    Prior {
        same_application,
        same_environment: true,
        created_ms,
        decided: Some(status),
    }
}

const fn elsewhere(same_application: bool, created_ms: i64) -> Prior {
    Prior {
        same_application,
        same_environment: false,
        created_ms,
        decided: None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    Created,
    /// Refused for pending sessions; retry at this offset.
    TooManyPending(i64),
    /// Refused for the hour's sessions; retry at this offset.
    TooManyInWindow(i64),
}

/// Sessions live 5 minutes (`super::session`).
const TTL: i64 = 300_000;
/// [`FloodLimits::window`] below.
const WINDOW: i64 = 3_600_000;

const LIMITS: FloodLimits = FloodLimits {
    pending_per_application: 2,
    per_window: 3,
    window: Duration::from_millis(WINDOW as u64),
};

/// (what it checks, the recipient's sessions, when the new one is created, the verdict).
const CASES: &[(&str, &[Prior], i64, Expected)] = &[
    (
        "under both limits",
        &[pending(true, 0)],
        10,
        Expected::Created,
    ),
    (
        "two pending from the application: retry when the oldest expires",
        &[pending(true, 0), pending(true, 10)],
        20,
        Expected::TooManyPending(TTL),
    ),
    (
        "a pending session one millisecond before its expiry counts",
        &[pending(true, 0), pending(true, 10)],
        TTL - 1,
        Expected::TooManyPending(TTL),
    ),
    (
        "a pending session whose expiry is now does not count",
        &[pending(true, 0), pending(true, 10)],
        TTL,
        Expected::Created,
    ),
    (
        "decided sessions are not pending",
        &[
            decided(true, 0, SessionStatus::Approved),
            decided(true, 5, SessionStatus::Rejected),
            pending(true, 10),
        ],
        20,
        Expected::TooManyInWindow(WINDOW),
    ),
    (
        "one decided and one pending: one more fits",
        &[decided(true, 0, SessionStatus::Approved), pending(true, 10)],
        20,
        Expected::Created,
    ),
    (
        "another application's pending sessions are its own",
        &[pending(false, 0), pending(false, 10)],
        20,
        Expected::Created,
    ),
    (
        "the hour counts every application: retry when the oldest leaves it",
        &[
            pending(false, 0),
            pending(false, 1_000),
            pending(true, 2_000),
        ],
        3_000,
        Expected::TooManyInWindow(WINDOW),
    ),
    (
        "a session created one millisecond inside the window counts",
        &[
            decided(false, 0, SessionStatus::Approved),
            decided(false, 1_000, SessionStatus::Approved),
            decided(true, 2_000, SessionStatus::Rejected),
        ],
        WINDOW - 1,
        Expected::TooManyInWindow(WINDOW),
    ),
    (
        "a session created exactly one window ago has left it",
        &[
            decided(false, 0, SessionStatus::Approved),
            decided(false, 1_000, SessionStatus::Approved),
            decided(true, 2_000, SessionStatus::Rejected),
        ],
        WINDOW,
        Expected::Created,
    ),
    (
        "over both limits: the pending limit is named",
        &[pending(true, 0), pending(true, 10), pending(false, 20)],
        30,
        Expected::TooManyPending(TTL),
    ),
    (
        "the other environment's sessions count for nothing",
        &[
            elsewhere(true, 0),
            elsewhere(true, 10),
            elsewhere(false, 20),
        ],
        30,
        Expected::Created,
    ),
];

/// Every case of the table, each on a fresh recipient, through `SessionRepository::create`.
pub async fn flood_rules_follow_the_table(stores: Stores) {
    for &(name, priors, now_ms, expected) in CASES {
        let recipient = phone();
        let application: ApplicationId = ids().next();
        let other: ApplicationId = ids().next();
        let roomy = FloodLimits {
            pending_per_application: u32::MAX,
            per_window: u32::MAX,
            ..LIMITS
        };
        for prior in priors {
            let owner = if prior.same_application {
                &application
            } else {
                &other
            };
            let environment = if prior.same_environment {
                Environment::Sandbox
            } else {
                Environment::Live
            };
            let made = session(owner, environment, &recipient, at(prior.created_ms));
            stores
                .sessions
                .create(&made, &Effects::default(), &roomy, made.created_at)
                .await
                .unwrap_or_else(|error| panic!("{name}: setting up: {error:?}"));
            if let Some(status) = prior.decided {
                stores
                    .sessions
                    .decide(
                        &made.id,
                        status,
                        made.created_at.plus(Duration::from_millis(1)),
                        &Effects::default(),
                    )
                    .await
                    .unwrap_or_else(|error| panic!("{name}: setting up: {error:?}"));
            }
        }
        let new = session(&application, Environment::Sandbox, &recipient, at(now_ms));
        let outcome = stores
            .sessions
            .create(&new, &Effects::default(), &LIMITS, at(now_ms))
            .await;
        let actual = match outcome {
            Ok(()) => Expected::Created,
            Err(CreateError::Refused(CreateRefused::TooManyPending { retry_at })) => {
                Expected::TooManyPending(retry_at.as_millis() - at(0).as_millis())
            }
            Err(CreateError::Refused(CreateRefused::TooManyInWindow { retry_at })) => {
                Expected::TooManyInWindow(retry_at.as_millis() - at(0).as_millis())
            }
            Err(other) => panic!("{name}: {other:?}"),
        };
        assert_eq!(actual, expected, "{name}");
        let stored = stores.sessions.find(&new.id).await.unwrap();
        assert_eq!(
            stored.is_some(),
            expected == Expected::Created,
            "{name}: a refused create writes nothing"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table's verdicts are the pure rules' verdicts for the sessions the table says count.
    #[test]
    fn the_table_agrees_with_the_pure_rules() {
        for &(name, priors, now_ms, expected) in CASES {
            let now = at(now_ms);
            let pending: Vec<_> = priors
                .iter()
                .filter(|p| p.same_application && p.same_environment && p.decided.is_none())
                .map(|p| at(p.created_ms + TTL))
                .filter(|expiry| *expiry > now)
                .collect();
            let window_start = LIMITS.window_start(now);
            let recent: Vec<_> = priors
                .iter()
                .filter(|p| p.same_environment)
                .map(|p| at(p.created_ms))
                .filter(|created| *created > window_start)
                .collect();
            let verdict = LIMITS
                .pending_refusal(&pending, now)
                .or_else(|| LIMITS.window_refusal(&recent, now));
            let actual = match verdict {
                None => Expected::Created,
                Some(CreateRefused::TooManyPending { retry_at }) => {
                    Expected::TooManyPending(retry_at.as_millis() - at(0).as_millis())
                }
                Some(CreateRefused::TooManyInWindow { retry_at }) => {
                    Expected::TooManyInWindow(retry_at.as_millis() - at(0).as_millis())
                }
            };
            assert_eq!(actual, expected, "{name}");
        }
    }
}
