//! What each scenario sends: the plan of bodies and endpoints, built once before the load.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::{Args, post_signed};

pub(crate) fn body(client_id: &str, recipient: &str, callback_url: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "clientId": client_id,
        "recipient": recipient,
        "intent": "LOGIN",
        "callbackUrl": callback_url,
        "transaction": {
            "type": "login",
            "description": "Sign in to Example Shop",
            "amount": 0,
            "currency": "USD",
            "payee": "Example Shop",
        },
    }))
    .unwrap()
}

/// A mandate like the consent above: a monthly direct debit for a new recipient.
pub(crate) fn mandate_body(recipient: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "recipient": recipient,
        "type": "direct_debit",
        "amount": 49.9,
        "currency": "EUR",
        "frequency": "monthly",
        "description": "Gym membership",
    }))
    .unwrap()
}

/// A plan that posts `body` to `endpoint` every time, after a probe that must answer 201.
pub(crate) async fn fixed_body(args: &Args, endpoint: String, body: &serde_json::Value) -> Plan {
    let body = serde_json::to_vec(body).unwrap();
    let probe = post_signed(&reqwest::Client::new(), &endpoint, args, body.clone())
        .await
        .expect("the probe request failed");
    let status = probe.status().as_u16();
    let text = probe.text().await.unwrap_or_default();
    assert!(
        status == 201,
        "the probe request was refused: {status} {text}"
    );
    println!("probe: 201, request body {} bytes", body.len());
    Plan::FixedBody { endpoint, body }
}

pub(crate) enum Plan {
    Consents {
        endpoint: String,
        callback_url: String,
        run: u16,
    },
    Exchange {
        endpoint: String,
        codes: std::sync::Mutex<Vec<String>>,
        exhausted: AtomicBool,
    },
    Mandates {
        endpoint: String,
        run: u16,
    },
    QrImage {
        endpoint: String,
    },
    /// The same body every time (an upload).
    FixedBody {
        endpoint: String,
        body: Vec<u8>,
    },
}

impl Plan {
    pub(crate) fn endpoint(&self) -> &str {
        match self {
            Plan::Consents { endpoint, .. }
            | Plan::Exchange { endpoint, .. }
            | Plan::Mandates { endpoint, .. }
            | Plan::QrImage { endpoint }
            | Plan::FixedBody { endpoint, .. } => endpoint,
        }
    }

    /// The body of request `n`; `None` once there is nothing left to send.
    pub(crate) fn body(&self, args: &Args, n: u64) -> Option<Vec<u8>> {
        match self {
            Plan::Consents {
                callback_url, run, ..
            } => Some(body(&args.client_id, &recipient(*run, n), callback_url)),
            Plan::Mandates { run, .. } => Some(mandate_body(&recipient(*run, n))),
            Plan::QrImage { .. } => Some(Vec::new()),
            // Trailing spaces keep two requests signed in the same millisecond distinct: the
            // server accepts a signature once.
            Plan::FixedBody { body, .. } => {
                let mut body = body.clone();
                body.resize(body.len() + (n % 512) as usize, b' ');
                Some(body)
            }
            Plan::Exchange {
                codes, exhausted, ..
            } => {
                let code = codes.lock().unwrap().pop();
                if code.is_none() {
                    exhausted.store(true, Ordering::Relaxed);
                }
                code.map(|code| exchange_body(&code))
            }
        }
    }

    pub(crate) fn exhausted(&self) -> bool {
        matches!(self, Plan::Exchange { exhausted, .. } if exhausted.load(Ordering::Relaxed))
    }
}

/// A recipient no other request of this run (or of another `--run`) uses: flood limits are
/// per recipient.
pub(crate) fn recipient(run: u16, n: u64) -> String {
    format!("+1555{run:03}{:07}", n % 10_000_000)
}

/// The PKCE verifier of every prepared code (RFC 7636 appendix B) and its S256 challenge.
pub(crate) const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
pub(crate) const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

pub(crate) fn exchange_body(code: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({"code": code, "codeVerifier": VERIFIER})).unwrap()
}
