//! OpenID Connect driven by real, unmodified relying-party libraries of two ecosystems (issue
//! 34): Authlib from PyPI (`tests/oidc-clients/authlib_rp.py`) and openid-client from npm
//! (`tests/oidc-clients/openid_client_rp.mjs`). The library does discovery, builds the
//! authorization URL (PKCE S256, state, nonce, login_hint), checks the response's `iss`,
//! exchanges the code with the client authentication under test, validates the ID token itself
//! (signature against our JWKS, iss, aud, exp, nonce; Authlib also at_hash), calls userinfo,
//! refreshes (and sees a replayed refresh token end the family), introspects and revokes. The
//! test plays the browser (each redirect hop by plain HTTP) and the app (the software passkey
//! approves).

use std::process::Stdio;

use idconsent_e2e::TestApp;
use idconsent_e2e::enduser::AppUser;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use super::oidc::{REDIRECT, approve_in_app, client, param};

crate::oidc_on_both_backends!(
    authlib_signs_in_with_client_secret_basic,
    authlib_signs_in_with_client_secret_post,
    openid_client_signs_in_with_client_secret_basic,
    openid_client_signs_in_with_client_secret_post,
);

const CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/oidc-clients");

#[derive(Debug, Clone, Copy)]
enum Library {
    /// Python, PyPI.
    Authlib,
    /// Node, npm.
    OpenIdClient,
}

impl Library {
    fn command(self) -> Command {
        match self {
            Library::Authlib => {
                let mut command = Command::new("python3");
                command.arg(format!("{CLIENTS}/authlib_rp.py"));
                command
            }
            Library::OpenIdClient => {
                let mut command = Command::new("node");
                command.arg(format!("{CLIENTS}/openid_client_rp.mjs"));
                command
            }
        }
    }
}

async fn authlib_signs_in_with_client_secret_basic(app: TestApp) {
    signs_in_with(app, Library::Authlib, "client_secret_basic").await;
}

async fn authlib_signs_in_with_client_secret_post(app: TestApp) {
    signs_in_with(app, Library::Authlib, "client_secret_post").await;
}

async fn openid_client_signs_in_with_client_secret_basic(app: TestApp) {
    signs_in_with(app, Library::OpenIdClient, "client_secret_basic").await;
}

async fn openid_client_signs_in_with_client_secret_post(app: TestApp) {
    signs_in_with(app, Library::OpenIdClient, "client_secret_post").await;
}

async fn signs_in_with(app: TestApp, library: Library, method: &str) {
    let client = client(&app, method).await;
    let mut user = AppUser::enrolled(&app).await;
    let issuer = app.url("");
    let issuer = issuer.trim_end_matches('/').to_owned();
    let mut rp = library
        .command()
        .args([
            issuer.as_str(),
            client.client_id.as_str(),
            client.secret.as_str(),
            REDIRECT,
            method,
            user.phone.as_str(),
            "openid phone profile",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| {
            panic!("{library:?}: {error} (.ci/run installs Authlib and openid-client)")
        });
    let mut lines = BufReader::new(rp.stdout.take().unwrap()).lines();
    let mut stdin = rp.stdin.take().unwrap();
    let started: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let authorization_url = started["authorization_url"]
        .as_str()
        .expect("authorization URL");
    assert_eq!(
        param(authorization_url, "code_challenge_method").as_deref(),
        Some("S256")
    );

    let landed = approve_in_app(&app, &mut user, authorization_url).await;
    assert!(landed.starts_with(REDIRECT), "{landed}");
    stdin
        .write_all(format!("{landed}\n").as_bytes())
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let finished: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert!(finished.get("error").is_none(), "{library:?}: {finished}");
    assert!(rp.wait().await.unwrap().success());

    let id_token = &finished["id_token"];
    assert_eq!(id_token["iss"], issuer.as_str());
    assert_eq!(id_token["aud"], client.client_id.as_str());
    assert_eq!(id_token["nonce"], started["nonce"]);
    assert_eq!(id_token["amr"], serde_json::json!(["hwk", "user"]));
    assert_eq!(id_token["acr"], "phr");
    assert!(id_token["auth_time"].as_i64().unwrap() <= id_token["iat"].as_i64().unwrap());
    let subject = id_token["sub"].as_str().unwrap();
    assert_ne!(subject, user.phone.as_str());
    assert_eq!(id_token["phone_number"], user.phone.as_str());

    let userinfo = &finished["userinfo"];
    assert_eq!(userinfo["sub"], subject);
    assert_eq!(userinfo["phone_number"], user.phone.as_str());
    assert_eq!(userinfo["phone_number_verified"], true);
    assert_eq!(
        userinfo["verification"]["phone_number"]["source"],
        "sms_otp"
    );
    // No verified name yet: profile claims are left out rather than null.
    assert!(userinfo.get("given_name").is_none());

    // Rotation: a new refresh token each time; the spent one replayed ends the family.
    assert_eq!(finished["refresh_rotated"], true);
    assert_eq!(finished["userinfo_after_refresh"]["sub"], subject);
    assert_eq!(
        finished["refresh_replay_errors"],
        serde_json::json!(["invalid_grant", "invalid_grant"])
    );

    // openid-client reports it lower-cased.
    assert!(
        finished["token"]["token_type"]
            .as_str()
            .unwrap()
            .eq_ignore_ascii_case("Bearer")
    );
    assert_eq!(finished["token"]["scope"], "openid phone profile");
    assert_eq!(finished["introspection"]["active"], true);
    assert_eq!(
        finished["introspection"]["client_id"],
        client.client_id.as_str()
    );
    assert_eq!(finished["introspection"]["sub"], subject);
    assert_eq!(finished["introspection_after_revoke"]["active"], false);
    assert_eq!(finished["userinfo_after_revoke_status"], 401);
}
