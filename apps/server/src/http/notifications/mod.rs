//! Outgoing SMS and email: the dev mailbox and the operator's test message.

mod mailbox;
mod test_message;

pub use mailbox::dev_messages;
pub use test_message::send_test_message;

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.notifier));
}
