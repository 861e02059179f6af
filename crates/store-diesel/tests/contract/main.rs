//! Port contract suites and schema checks, on SQLite always and PostgreSQL when configured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod consent;
mod enduser;
mod merchant;
mod migrations;
mod notification;
mod oauth;
mod signature;
mod throttle;
mod webhook;
