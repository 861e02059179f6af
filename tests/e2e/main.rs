//! End-to-end tests over real HTTP. One binary, one module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod billing;
mod blobs;
mod consents;
mod contract;
mod devices;
mod endusers;
#[cfg(feature = "example-purpose")]
mod example_purpose;
mod foundation;
mod gates;
mod hosted;
mod hosted_browser;
mod identity;
mod identity_bounds;
mod identity_chip;
mod identity_images;
mod identity_liveness;
mod invitations;
mod limits;
mod mandates;
mod merchants;
mod oauth;
mod oauth_browser;
mod oidc;
mod oidc_ciba;
mod oidc_clients;
mod outage;
mod qr;
mod scale_out;
mod signatures;
mod two_processes;
mod webhooks;
