//! End-to-end tests over real HTTP. One binary, one module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod foundation;
mod merchants;
