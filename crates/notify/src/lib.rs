#![doc = include_str!("../README.md")]

mod dev_mailbox;
mod http_sms;
mod smtp;

pub use dev_mailbox::DevMailbox;
pub use http_sms::{HttpSms, HttpSmsConfig, HttpSmsConfigError};
pub use smtp::{SmtpConfigError, SmtpEmail};
