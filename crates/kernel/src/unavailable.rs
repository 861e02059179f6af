//! Storage that cannot be reached is a condition to wait out, not a bug (issue 19).
//!
//! A storage adapter wraps such failures — connection refused or lost, no connection free within
//! the pool's wait, the server shutting down, in recovery or read-only, SQLite busy past its
//! timeout or its disk full — in [`StorageUnavailable`] somewhere in the error's source chain.
//! Domain errors carry it unchanged inside their `Unavailable` variants, and the edges (the HTTP
//! layer, background workers) look for it with [`storage_unavailable`]: a client gets 503 with
//! `Retry-After` instead of 500, a worker backs off instead of logging every round.

use std::error::Error;

/// The storage cannot serve right now; retrying later may succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("storage unavailable: {reason}")]
pub struct StorageUnavailable {
    /// What the adapter saw, for logs (never shown to clients).
    pub reason: String,
}

impl StorageUnavailable {
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// The [`StorageUnavailable`] in `error`'s source chain (itself included), if any.
pub fn storage_unavailable<'a>(error: &'a (dyn Error + 'static)) -> Option<&'a StorageUnavailable> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<StorageUnavailable>() {
            return Some(found);
        }
        current = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("repository failed")]
        Unavailable(#[source] Box<dyn Error + Send + Sync>),
    }

    #[derive(Debug, thiserror::Error)]
    enum Adapter {
        #[error("database unreachable")]
        Unreachable(#[source] StorageUnavailable),
        #[error("constraint violated")]
        Bug,
    }

    #[test]
    fn found_anywhere_in_the_chain_and_only_there() {
        let wrapped = Outer::Unavailable(Box::new(Adapter::Unreachable(StorageUnavailable::new(
            "connection refused",
        ))));
        assert_eq!(
            storage_unavailable(&wrapped).map(|u| u.reason.as_str()),
            Some("connection refused")
        );
        let bug = Outer::Unavailable(Box::new(Adapter::Bug));
        assert_eq!(storage_unavailable(&bug), None);
        let bare = StorageUnavailable::new("pool timeout");
        assert!(storage_unavailable(&bare).is_some());
    }
}
