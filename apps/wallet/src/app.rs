//! The mobile app's flows: enrollment, sign-in, devices, showing and deciding consents.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::api::{Api, ApiError};
use crate::commitment::{self, Expected};
use crate::state::{Tokens, Wallet};

/// Where the enrollment's SMS code comes from.
#[derive(Debug, Clone)]
pub enum Otp {
    Given(String),
    DevMailbox,
    Prompt,
}

#[derive(Debug, Clone)]
pub struct Enroll {
    pub phone: String,
    pub name: Option<String>,
    pub device_name: String,
    pub otp: Otp,
}

/// What `enroll` did.
#[derive(Debug, Clone)]
pub struct Enrolled {
    pub enrollment_id: String,
    pub device_id: String,
    pub credential_id: String,
    pub status: String,
}

/// Enrolls the wallet's phone: code, passkey registration, then the enrollment's verification
/// with that passkey (CONTRACT §3 steps 1–5).
pub async fn enroll(wallet: &mut Wallet, api: &Api, request: Enroll) -> anyhow::Result<Enrolled> {
    let mailbox_before = match request.otp {
        Otp::DevMailbox => mailbox(api, &request.phone).await?.len(),
        _ => 0,
    };
    let started = api
        .post(
            "/v1/enrollments",
            &json!({
                "phone": request.phone,
                "name": request.name,
                "deviceName": request.device_name,
                "platform": "cli",
            }),
        )
        .await?;
    let enrollment_id = text(&started, "enrollmentId")?;
    // The service's form of the phone (E.164) from now on.
    let phone = started["phone"]
        .as_str()
        .unwrap_or(&request.phone)
        .to_owned();
    wallet.file.phone = Some(phone.clone());
    wallet.file.enrollment_id = Some(enrollment_id.clone());
    wallet.save()?;

    let otp = match request.otp {
        Otp::Given(code) => code,
        Otp::DevMailbox => code_from_mailbox(api, &phone, mailbox_before).await?,
        Otp::Prompt => prompt(&format!("SMS code sent to {phone}: "))?,
    };

    let options = api
        .post(
            "/v1/auth/fido/register/begin",
            &json!({"enrollmentId": enrollment_id, "otp": otp.trim()}),
        )
        .await?;
    let challenge_id = text(&options, "challengeId")?;
    let mut passkey = wallet.passkey()?;
    let credential = passkey
        .register(
            &wallet.file.origin,
            &json!({"publicKey": options["publicKey"]}),
        )
        .context("the software passkey refused to register")?;
    wallet.keep_passkey(&passkey)?;
    let registered = api
        .post(
            "/v1/auth/fido/register/complete",
            &json!({"challengeId": challenge_id, "credential": credential}),
        )
        .await?;
    let device_id = text(&registered, "deviceId")?;
    let credential_id = text(&registered, "credentialId")?;
    wallet.file.credential_id = Some(credential_id.clone());
    wallet.file.pending_device_id = Some(device_id.clone());
    wallet.save()?;
    // A phone that already has devices: one of them must approve this one (or a recovery must
    // run its course) before the enrollment can be finished (`finish`).
    if registered["status"] == "pending" {
        return Ok(Enrolled {
            enrollment_id,
            device_id,
            credential_id,
            status: "pending".into(),
        });
    }
    finish(wallet, api).await
}

/// Finishes the wallet's enrollment with its passkey: right after registering, or once
/// another device approved this one (or its recovery ended).
pub async fn finish(wallet: &mut Wallet, api: &Api) -> anyhow::Result<Enrolled> {
    let enrollment_id = wallet
        .file
        .enrollment_id
        .clone()
        .context("this wallet has no enrollment; run `enroll` first")?;
    let device_id = wallet
        .file
        .pending_device_id
        .clone()
        .or_else(|| wallet.file.device_id.clone())
        .context("this wallet registered no passkey; run `enroll` first")?;
    let credential_id = wallet.file.credential_id.clone().unwrap_or_default();
    let (challenge_id, _context, credential) =
        sign(wallet, api, "enrollment", Some(&enrollment_id)).await?;
    let verified = api
        .post(
            &format!("/v1/enrollments/{enrollment_id}/verify"),
            &json!({"challengeId": challenge_id, "credential": credential}),
        )
        .await?;
    // Only a completed enrollment makes this wallet a device that can approve.
    wallet.file.device_id = Some(device_id.clone());
    wallet.file.pending_device_id = None;
    wallet.save()?;
    Ok(Enrolled {
        enrollment_id,
        device_id,
        credential_id,
        status: verified["status"]
            .as_str()
            .unwrap_or("completed")
            .to_owned(),
    })
}

/// Starts an assertion for a purpose, checks that its challenge commits to the context shown
/// and that the context is what was asked for, then signs (saving the passkey's new counter).
/// Returns the challenge id, the verified context and the credential.
async fn sign(
    wallet: &mut Wallet,
    api: &Api,
    purpose: &str,
    id: Option<&str>,
) -> anyhow::Result<(String, Value, Value)> {
    let started = begin(wallet, api, purpose, id).await?;
    let context = verified_context(wallet, &started, purpose, id)?;
    let credential = sign_started(wallet, &started)?;
    Ok((text(&started, "challengeId")?, context, credential))
}

/// `authenticate/begin` for the wallet's phone.
pub async fn begin(
    wallet: &Wallet,
    api: &Api,
    purpose: &str,
    id: Option<&str>,
) -> anyhow::Result<Value> {
    let mut purpose_json = json!({"type": purpose});
    if let Some(id) = id {
        purpose_json["id"] = json!(id);
    }
    api.post(
        "/v1/auth/fido/authenticate/begin",
        &json!({"phone": wallet.phone()?, "purpose": purpose_json}),
    )
    .await
}

/// The begin response's context, once the commitment and the purpose check out.
pub fn verified_context(
    wallet: &Wallet,
    started: &Value,
    purpose: &str,
    id: Option<&str>,
) -> anyhow::Result<Value> {
    let expected = match (purpose, id) {
        ("login", _) => Expected::Login,
        ("enrollment", Some(id)) => Expected::Enrollment(id),
        ("consent", Some(id)) => Expected::Consent(id),
        ("mandate", Some(id)) => Expected::Mandate(id),
        ("device_add", Some(id)) => Expected::DeviceAdd(id),
        _ => bail!("the wallet does not sign for {purpose}"),
    };
    Ok(commitment::verify(started, wallet.phone()?, expected)?.clone())
}

/// Signs a verified begin response's challenge with the wallet's passkey.
pub fn sign_started(wallet: &mut Wallet, started: &Value) -> anyhow::Result<Value> {
    let mut passkey = wallet.passkey()?;
    let credential = passkey
        .authenticate(
            &wallet.file.origin,
            &json!({"publicKey": started["publicKey"]}),
        )
        .context("the software passkey refused to sign")?;
    // The counter moved: keep it before the server sees the assertion.
    wallet.keep_passkey(&passkey)?;
    Ok(credential)
}

/// What `approve` or `reject` did.
#[derive(Debug, Clone)]
pub struct Decided {
    pub status: String,
    pub verified: bool,
}

/// Applies `decision` (`approve` or `reject`) to a begin response already shown to the user.
pub async fn decide(
    wallet: &mut Wallet,
    api: &Api,
    started: &Value,
    decision: &str,
) -> anyhow::Result<Decided> {
    let credential = sign_started(wallet, started)?;
    let completed = api
        .post(
            "/v1/auth/fido/authenticate/complete",
            &json!({
                "challengeId": text(started, "challengeId")?,
                "credential": credential,
                "decision": decision,
            }),
        )
        .await?;
    Ok(Decided {
        status: completed["status"].as_str().unwrap_or_default().to_owned(),
        verified: completed["verified"] == Value::Bool(true),
    })
}

/// Starts a recovery for the wallet's pending device: it becomes active after the cooling-off
/// period unless one of the phone's devices rejects it. Returns the device as the service
/// shows it (with `recoveryEndsAt`).
pub async fn recover(wallet: &Wallet, api: &Api) -> anyhow::Result<Value> {
    let enrollment_id = wallet
        .file
        .enrollment_id
        .clone()
        .context("this wallet has no enrollment; run `enroll` first")?;
    api.post(
        &format!("/v1/enrollments/{enrollment_id}/recovery"),
        &json!({}),
    )
    .await
}

/// Signs in with the passkey (purpose `login`) and keeps the token pair.
pub async fn login(wallet: &mut Wallet, api: &Api) -> anyhow::Result<Value> {
    let (challenge_id, _context, credential) = sign(wallet, api, "login", None).await?;
    let pair = api
        .post(
            "/v6/auth/login",
            &json!({"challengeId": challenge_id, "credential": credential}),
        )
        .await?;
    keep_tokens(wallet, &pair)?;
    Ok(pair)
}

fn keep_tokens(wallet: &mut Wallet, pair: &Value) -> anyhow::Result<()> {
    let expires_in = pair["expiresIn"].as_u64().unwrap_or(0);
    wallet.file.tokens = Some(Tokens {
        access_token: text(pair, "accessToken")?,
        refresh_token: text(pair, "refreshToken")?,
        expires_at: now_secs() + expires_in,
    });
    wallet.save()
}

/// An access token: the saved one while it has a minute left, else a refreshed one, else a new
/// sign-in with the passkey.
async fn access_token(wallet: &mut Wallet, api: &Api) -> anyhow::Result<String> {
    if let Some(tokens) = wallet.file.tokens.clone() {
        if tokens.expires_at > now_secs() + 60 {
            return Ok(tokens.access_token);
        }
        match api
            .post(
                "/v6/auth/refresh",
                &json!({"refreshToken": tokens.refresh_token}),
            )
            .await
        {
            Ok(pair) => {
                keep_tokens(wallet, &pair)?;
                return text(&pair, "accessToken");
            }
            // Expired, rotated or revoked: sign in again below.
            Err(error) if ApiError::is(&error, 401) => {
                wallet.file.tokens = None;
                wallet.save()?;
            }
            Err(error) => return Err(error),
        }
    }
    let pair = login(wallet, api).await?;
    text(&pair, "accessToken")
}

/// The user's devices (`GET /v1/devices`), signing in or refreshing as needed.
pub async fn devices(wallet: &mut Wallet, api: &Api) -> anyhow::Result<Vec<Value>> {
    let token = access_token(wallet, api).await?;
    let listed = match api.get("/v1/devices", Some(&token), &[]).await {
        // A token revoked early (device blocked and unblocked, family revoked): once more.
        Err(error) if ApiError::is(&error, 401) => {
            wallet.file.tokens = None;
            wallet.save()?;
            let token = access_token(wallet, api).await?;
            api.get("/v1/devices", Some(&token), &[]).await?
        }
        other => other?,
    };
    Ok(listed["devices"].as_array().cloned().unwrap_or_default())
}

/// The dev mailbox's messages to a phone (dev mode only).
async fn mailbox(api: &Api, phone: &str) -> anyhow::Result<Vec<Value>> {
    let messages = api
        .get("/v1/dev/messages", None, &[("to", phone)])
        .await
        .map_err(|error| {
            if ApiError::is(&error, 404) {
                error.context("the service has no dev mailbox (production mode?): pass --otp")
            } else {
                error
            }
        })?;
    Ok(messages["messages"].as_array().cloned().unwrap_or_default())
}

/// The code of the first message with one after the `before` messages already there.
async fn code_from_mailbox(api: &Api, phone: &str, before: usize) -> anyhow::Result<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let messages = mailbox(api, phone).await?;
        if let Some(code) = messages
            .iter()
            .skip(before)
            .rev()
            .find_map(|message| message["code"].as_str())
        {
            return Ok(code.to_owned());
        }
        if std::time::Instant::now() > deadline {
            bail!("no SMS code for {phone} arrived in the dev mailbox within 15 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn prompt(question: &str) -> anyhow::Result<String> {
    use std::io::Write as _;
    eprint!("{question}");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("cannot read the code from standard input")?;
    let line = line.trim().to_owned();
    if line.is_empty() {
        bail!("no code given");
    }
    Ok(line)
}

fn text(value: &Value, field: &str) -> anyhow::Result<String> {
    value[field]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("the service's answer has no {field}"))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default()
}

/// The wallet for a new enrollment at `path`: a fresh one, or an earlier one whose enrollment
/// never finished (same installation id). A wallet that already holds a device is refused.
pub fn wallet_for_enrollment(
    path: &Path,
    server: String,
    origin: String,
) -> anyhow::Result<Wallet> {
    match Wallet::open(path)? {
        Some(wallet) if wallet.file.device_id.is_some() => bail!(
            "the wallet at {} already holds device {} for {}; use another --wallet file",
            path.display(),
            wallet.file.device_id.as_deref().unwrap_or_default(),
            wallet.file.phone.as_deref().unwrap_or_default()
        ),
        Some(mut wallet) => {
            wallet.file.server = server;
            wallet.file.origin = origin;
            Ok(wallet)
        }
        None => Wallet::create(path, server, origin),
    }
}
