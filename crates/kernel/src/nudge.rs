//! Waking background work early.

use std::fmt;

/// Wakes whatever processes a queue (outgoing messages, webhook deliveries), so new work need
/// not wait for the next poll. Never blocks; waking an idle worker twice is harmless.
pub trait Nudge: Send + Sync + fmt::Debug {
    fn nudge(&self);
}
