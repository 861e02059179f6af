//! Logging: tracing to stderr, human-readable or JSON, filtered by `IDC_LOG` (default `info`).
//!
//! Lines are formatted on the thread that logs and written by a thread of their own, which
//! writes whatever has queued up in one go: under load one `write` carries many lines instead of
//! each request paying a system call. Nothing is dropped (a full queue makes loggers wait), and
//! the queue is flushed when the returned guard is dropped.

use std::io::BufWriter;

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the subscriber. Keep the guard until the process ends: dropping it flushes the
/// lines still queued.
#[must_use = "dropping the guard stops the log writer; hold it until the process ends"]
pub fn init(format: LogFormat) -> WorkerGuard {
    let filter = EnvFilter::try_from_env("IDC_LOG")
        .unwrap_or_else(|_| EnvFilter::new("info,actix_server=warn,actix_web=warn"));
    // The worker flushes the buffer each time it has written everything queued.
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("idc-log-writer")
        .finish(BufWriter::new(std::io::stderr()));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    guard
}
