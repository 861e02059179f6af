//! Error formatting every layer of the app uses (log lines, 500 bodies). Imports nothing of
//! the app: it stands on the ground floor.

/// An error with all its causes, for one log line.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
