//! What the wallet checks before it lets the passkey sign: the challenge commits to the context
//! it shows, and the context is about what was asked for.
//!
//! `challenge = SHA-256("idconsent-challenge-v1" ‖ nonce ‖ SHA-256(context JSON))`
//! (`idconsent_enduser::commitment`). A server, or anyone in between, that shows one thing and
//! asks the passkey to sign another is refused here, before any signature exists.

use anyhow::{Context as _, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_enduser::commitment::{context_hash, derive_challenge};
use serde_json::Value;

/// What the wallet asked to sign for.
#[derive(Debug, Clone, Copy)]
pub enum Expected<'a> {
    Login,
    Enrollment(&'a str),
    Consent(&'a str),
    Mandate(&'a str),
    /// A new device of the wallet's phone asks to join (ADR 0013).
    DeviceAdd(&'a str),
}

/// Checks an `authenticate/begin` response (`data`) for `phone` and `expected`; returns the
/// verified context.
pub fn verify<'a>(
    started: &'a Value,
    phone: &str,
    expected: Expected<'_>,
) -> anyhow::Result<&'a Value> {
    let context = started
        .get("context")
        .filter(|context| context.is_object())
        .context("the service sent no context to show")?;
    let hash = context_hash(context);
    let claimed = started["contextHash"]
        .as_str()
        .and_then(|text| hex::decode(text).ok())
        .context("the service sent no valid contextHash")?;
    ensure!(
        claimed == hash,
        "refusing to sign: contextHash does not match the context shown"
    );
    let nonce: [u8; 32] = started["nonce"]
        .as_str()
        .and_then(|text| hex::decode(text).ok())
        .and_then(|bytes| bytes.try_into().ok())
        .context("the service sent no valid nonce")?;
    let challenge = started["publicKey"]["challenge"]
        .as_str()
        .and_then(|text| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok())
        .context("the service sent no valid publicKey.challenge")?;
    ensure!(
        challenge == derive_challenge(&nonce, &hash),
        "refusing to sign: the challenge does not commit to the context shown"
    );

    let field = |name: &str| context[name].as_str().unwrap_or_default();
    match expected {
        Expected::Login => {
            ensure!(
                field("type") == "login",
                "refusing to sign: not a login context"
            );
            ensure!(
                field("phone") == phone,
                "refusing to sign: the login is for another phone"
            );
        }
        Expected::Enrollment(id) => {
            ensure!(
                field("type") == "enrollment" && field("enrollmentId") == id,
                "refusing to sign: the context is not enrollment {id}"
            );
            ensure!(
                field("phone") == phone,
                "refusing to sign: the enrollment is for another phone"
            );
        }
        Expected::Consent(id) => {
            if field("type") != "consent" || field("sessionId") != id {
                bail!("refusing to sign: the context is not consent session {id}");
            }
        }
        Expected::Mandate(id) => {
            ensure!(
                field("type") == "mandate" && field("mandateId") == id,
                "refusing to sign: the context is not mandate {id}"
            );
        }
        Expected::DeviceAdd(id) => {
            ensure!(
                field("type") == "device_add" && field("deviceId") == id,
                "refusing to sign: the context is not the new device {id}"
            );
            ensure!(
                field("phone") == phone,
                "refusing to sign: the device is for another phone"
            );
        }
    }
    Ok(context)
}

/// The context as lines a person reads before approving.
pub fn describe(context: &Value) -> Vec<(&'static str, String)> {
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut lines = Vec::new();
    let mut push = |label: &'static str, value: &Value| {
        let value = text(value);
        if !value.is_empty() {
            lines.push((label, value));
        }
    };
    push("merchant", &context["merchant"]);
    push("application", &context["application"]);
    push("intent", &context["intent"]);
    let transaction = &context["transaction"];
    if transaction.is_object() {
        push("type", &transaction["type"]);
        let amount = text(&transaction["amount"]);
        if !amount.is_empty() {
            let currency = text(&transaction["currency"]);
            let shown = format!("{amount} {currency}");
            push("amount", &Value::String(shown.trim().to_owned()));
        }
        push("payee", &transaction["payee"]);
        push("description", &transaction["description"]);
    }
    if context["type"] == "mandate" {
        let terms = |terms: &Value| {
            let amount = match &terms["amount"] {
                Value::Null => "no maximum".to_owned(),
                amount => format!("up to {amount} {}", text(&terms["currency"])),
            };
            match &terms["frequency"] {
                Value::Null => amount,
                frequency => format!("{amount}, {}", text(frequency)),
            }
        };
        push("mandate", &context["mandateType"]);
        push("description", &context["description"]);
        if context["previousTerms"].is_object() {
            push(
                "authorised so far",
                &Value::String(terms(&context["previousTerms"])),
            );
            push("new terms", &Value::String(terms(&context["terms"])));
        } else {
            push("terms", &Value::String(terms(&context["terms"])));
        }
        push("mandate id", &context["mandateId"]);
    }
    if context["type"] == "device_add" {
        push("new device", &context["name"]);
        push("platform", &context["platform"]);
        push("asked at", &context["requestedAt"]);
        push("recovery", &context["recoveryEndsAt"]);
        push("device", &context["deviceId"]);
    }
    push("environment", &context["environment"]);
    push("session", &context["sessionId"]);
    push("expires", &context["expiresAt"]);
    lines
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    fn started(context: Value) -> Value {
        let nonce = [7u8; 32];
        let hash = context_hash(&context);
        json!({
            "challengeId": "chl_1",
            "publicKey": {"challenge": URL_SAFE_NO_PAD.encode(derive_challenge(&nonce, &hash))},
            "context": context,
            "contextHash": hex::encode(hash),
            "nonce": hex::encode(nonce),
        })
    }

    fn consent() -> Value {
        json!({
            "type": "consent", "sessionId": "cs_1", "merchant": "Example Shop",
            "application": "Checkout", "environment": "sandbox", "intent": "TRANSACTION",
            "transaction": {"type": "payment", "amount": 19.99, "currency": "EUR",
                            "payee": "Example Shop", "description": "Order 42"},
            "expiresAt": "2026-11-21T10:00:00.000Z",
        })
    }

    #[test]
    fn an_honest_challenge_is_accepted() {
        let body = started(consent());
        let context = verify(&body, "+15551234567", Expected::Consent("cs_1")).unwrap();
        assert_eq!(context["transaction"]["amount"], 19.99);
        let login = started(json!({"type": "login", "phone": "+15551234567"}));
        verify(&login, "+15551234567", Expected::Login).unwrap();
        let enrollment = started(
            json!({"type": "enrollment", "enrollmentId": "enr_1", "phone": "+15551234567"}),
        );
        verify(&enrollment, "+15551234567", Expected::Enrollment("enr_1")).unwrap();
    }

    #[test]
    fn a_context_that_differs_from_what_was_committed_is_refused() {
        let mut body = started(consent());
        body["context"]["transaction"]["amount"] = json!(1999.0);
        let error = verify(&body, "+1", Expected::Consent("cs_1")).unwrap_err();
        assert!(error.to_string().contains("contextHash"), "{error}");

        // The hash is recomputed to match, but the challenge still commits to the old context.
        body["contextHash"] = json!(hex::encode(context_hash(&body["context"])));
        let error = verify(&body, "+1", Expected::Consent("cs_1")).unwrap_err();
        assert!(error.to_string().contains("challenge"), "{error}");
    }

    #[test]
    fn another_nonce_or_challenge_is_refused() {
        let mut body = started(consent());
        body["nonce"] = json!(hex::encode([8u8; 32]));
        assert!(verify(&body, "+1", Expected::Consent("cs_1")).is_err());
        let mut body = started(consent());
        body["publicKey"]["challenge"] = json!(URL_SAFE_NO_PAD.encode([0u8; 32]));
        assert!(verify(&body, "+1", Expected::Consent("cs_1")).is_err());
        let mut body = started(consent());
        body["nonce"] = json!("zz");
        assert!(verify(&body, "+1", Expected::Consent("cs_1")).is_err());
    }

    #[test]
    fn a_context_for_something_else_is_refused() {
        let body = started(consent());
        assert!(verify(&body, "+1", Expected::Consent("cs_2")).is_err());
        assert!(verify(&body, "+1", Expected::Login).is_err());
        let login = started(json!({"type": "login", "phone": "+15550000000"}));
        assert!(verify(&login, "+15551234567", Expected::Login).is_err());
        let enrollment = started(
            json!({"type": "enrollment", "enrollmentId": "enr_2", "phone": "+15551234567"}),
        );
        assert!(verify(&enrollment, "+15551234567", Expected::Enrollment("enr_1")).is_err());
    }

    #[test]
    fn the_context_is_hashed_in_the_order_the_service_sent_it() {
        // Not alphabetical: the service builds its context field by field and hashes that
        // serialisation; re-serialising what was parsed must give the same bytes
        // (serde_json's preserve_order), or honest challenges would be refused.
        let sent = r#"{"type":"consent","sessionId":"cs_1","merchant":"Example Shop","transaction":{"type":"payment","amount":19.99,"currency":"EUR"}}"#;
        let parsed: Value = serde_json::from_str(sent).unwrap();
        assert_eq!(serde_json::to_vec(&parsed).unwrap(), sent.as_bytes());
    }

    #[test]
    fn a_mandate_is_checked_by_id_and_shows_old_and_new_terms() {
        let mandate = json!({
            "type": "mandate", "mandateId": "md_1", "merchant": "Gym Co",
            "application": "Members", "environment": "sandbox", "mandateType": "direct_debit",
            "description": "Membership",
            "terms": {"amount": 75.0, "currency": "USD", "frequency": "weekly"},
            "previousTerms": {"amount": 50.0, "currency": "USD", "frequency": "monthly"},
            "expiresAt": "2026-11-21T10:00:00.000Z",
        });
        let body = started(mandate.clone());
        assert!(verify(&body, "+1", Expected::Mandate("md_1")).is_ok());
        assert!(verify(&body, "+1", Expected::Mandate("md_2")).is_err());
        assert!(verify(&body, "+1", Expected::Consent("md_1")).is_err());
        let lines = describe(&mandate);
        let find = |label| {
            lines
                .iter()
                .find(|(l, _)| *l == label)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(find("authorised so far"), Some("up to 50.0 USD, monthly"));
        assert_eq!(find("new terms"), Some("up to 75.0 USD, weekly"));
        assert_eq!(find("description"), Some("Membership"));
    }

    #[test]
    fn the_description_names_merchant_and_transaction() {
        let lines = describe(&consent());
        let find = |label| {
            lines
                .iter()
                .find(|(l, _)| *l == label)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(find("merchant"), Some("Example Shop"));
        assert_eq!(find("application"), Some("Checkout"));
        assert_eq!(find("intent"), Some("TRANSACTION"));
        assert_eq!(find("amount"), Some("19.99 EUR"));
        assert_eq!(find("payee"), Some("Example Shop"));
        assert_eq!(find("description"), Some("Order 42"));
    }
}
