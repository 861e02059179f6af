//! End-to-end tests over real HTTP. One binary, one module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod consents;
mod endusers;
mod foundation;
mod merchants;
mod oauth;
mod oauth_browser;
