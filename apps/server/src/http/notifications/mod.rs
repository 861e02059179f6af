//! Outgoing SMS and email: the dev mailbox and the operator's test message.

mod mailbox;
mod test_message;

pub use mailbox::dev_messages;
pub use test_message::send_test_message;
