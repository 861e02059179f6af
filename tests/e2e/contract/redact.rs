//! What changes from run to run is replaced by a placeholder naming its kind, so that a snapshot
//! shows the shape of a body and every fixed value in it: ids keep their prefix (`cs_[id]`),
//! secrets theirs (`sk_[secret]`), times become `[timestamp]`, random test data (phones, the
//! digits of emails and device names, ports, link tokens) become `[phone]`, `#`, `[port]`,
//! `[token]`. Rules go by the value's shape first, then by a few field names whose values are
//! opaque random bytes (WebAuthn challenges, key coordinates, hashes).

use serde_json::Value;

/// Prefixes of secrets: everything after them is redacted.
const SECRET_PREFIXES: [&str; 8] = [
    "mk_test_", "mk_live_", "whsec_", "sk_", "rt_", "ac_", "ocs_", "ort_",
];

/// Fields whose string values are random bytes in some encoding (base64url, hex, key ids).
const OPAQUE_FIELDS: [&str; 13] = [
    "challenge",
    "sub",
    "token",
    "credentialId",
    "rawId",
    "id",
    "x",
    "y",
    "kid",
    "nonce",
    "contextHash",
    "fingerprint",
    "userHandle",
];

/// Fields whose text carries random digits (SMS codes and the messages that carry them).
const RANDOM_DIGIT_FIELDS: [&str; 2] = ["code", "body"];

/// Numeric fields that vary from run to run.
const VOLATILE_NUMBERS: [&str; 4] = ["durationMs", "iat", "exp", "verified_at"];

/// `text` with a trailing `YYYY-MM` replaced by `[month]`, if it ends with one.
fn redact_month(text: &str) -> Option<String> {
    let start = text.len().checked_sub(7)?;
    let tail = text.get(start..)?;
    let bytes = tail.as_bytes();
    let is_month = bytes[4] == b'-'
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes[5..].iter().all(u8::is_ascii_digit);
    is_month.then(|| format!("{}[month]", &text[..start]))
}

/// `value` with everything that changes between runs replaced.
pub fn redacted(value: &Value) -> Value {
    redact("", value)
}

fn redact(field: &str, value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, value)| (name.clone(), redact(name, value)))
                .collect(),
        ),
        // Items are named by their list's field (`allowCredentials[].id` stays an `id`).
        Value::Array(items) => Value::Array(items.iter().map(|item| redact(field, item)).collect()),
        Value::String(text) => Value::String(redact_text(field, text)),
        Value::Number(_) if VOLATILE_NUMBERS.contains(&field) => {
            Value::String(format!("[{field}]"))
        }
        other => other.clone(),
    }
}

fn redact_text(field: &str, text: &str) -> String {
    if is_timestamp(text) {
        return "[timestamp]".into();
    }
    // Measured durations (`42ms`) follow the machine's speed.
    if field == "processingTime" {
        return "[duration]".into();
    }
    // Billing months (`2026-11`, "Basic plan, 2026-11") follow the day the tests run.
    if matches!(field, "period" | "description")
        && let Some(redacted) = redact_month(text)
    {
        return redacted;
    }
    if let Some(prefix) = SECRET_PREFIXES.iter().find(|p| text.starts_with(**p)) {
        return format!("{prefix}[secret]");
    }
    if let Some(prefix) = id_prefix(text) {
        return format!("{prefix}_[id]");
    }
    if text.starts_with("eyJ") && text.matches('.').count() == 2 {
        return "[jwt]".into();
    }
    if text.len() > 8 && text.starts_with('+') && text[1..].bytes().all(|b| b.is_ascii_digit()) {
        return "[phone]".into();
    }
    if text.starts_with("iVBORw0KGgo") {
        return "[png, base64]".into();
    }
    if OPAQUE_FIELDS.contains(&field) && looks_random(text) {
        return "[opaque]".into();
    }
    let text = redact_query_value(text, "token=", "[token]");
    let text = redact_query_value(&text, "code=", "[secret]");
    let text = redact_port(&text);
    let text = redact_path_ids(&text);
    // Test emails, installations and SMS texts carry random digits; fixed texts keep theirs.
    if text.contains('@') || RANDOM_DIGIT_FIELDS.contains(&field) {
        long_digit_runs(&text)
    } else {
        text
    }
}

/// base64url or hex of at least 12 bytes: no separator a word or a URL would have.
fn looks_random(text: &str) -> bool {
    text.len() >= 16
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'=' | b'+' | b'/'))
}

/// `2026-11-24T20:44:00.123Z` and other RFC 3339 times.
fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 20
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes[10] == b'T'
        && bytes[13] == b':'
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && (text.ends_with('Z') || text.get(19..).is_some_and(|zone| zone.contains('+')))
}

/// The prefix of a typed id: lower-case letters, `_`, then at least 20 characters of
/// Crockford base32 (`cs_01JDKX…`, `evt_01JD…`, `at_01JD…`).
fn id_prefix(text: &str) -> Option<&str> {
    let (prefix, body) = text.split_once('_')?;
    let is_prefix =
        (1..=6).contains(&prefix.len()) && prefix.bytes().all(|b| b.is_ascii_lowercase());
    let is_body = body.len() >= 20
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
    (is_prefix && is_body).then_some(prefix)
}

/// Replaces the value of a query parameter (up to the next `&` or `#`).
fn redact_query_value(text: &str, parameter: &str, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(parameter) {
        let starts_parameter = at == 0 || matches!(rest.as_bytes()[at - 1], b'?' | b'&');
        let value_start = at + parameter.len();
        out.push_str(&rest[..value_start]);
        rest = &rest[value_start..];
        if starts_parameter {
            let end = rest.find(['&', '#', ' ', '\n']).unwrap_or(rest.len());
            out.push_str(placeholder);
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

/// `127.0.0.1:41234` → `127.0.0.1:[port]`: local receivers listen on a free port.
fn redact_port(text: &str) -> String {
    const HOST: &str = "127.0.0.1:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(HOST) {
        out.push_str(&rest[..at + HOST.len()]);
        rest = &rest[at + HOST.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str("[port]");
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

/// Ids as path segments of URLs (`…/sign/sr_01JD…` → `…/sign/sr_[id]`, `…/v1/qr/qr_…/image`).
fn redact_path_ids(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    text.split('/')
        .map(|segment| match id_prefix(segment) {
            Some(prefix) => format!("{prefix}_[id]"),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Runs of six digits or more (random parts of test emails and names, SMS codes) → `#`.
fn long_digit_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if digits.len() >= 6 {
            out.push('#');
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn run_specific_values_become_placeholders() {
        let body = json!({
            "sessionId": "cs_01JDKXA1B2C3D4E5F6G7H8J9K0ABCDEFGHJKMN",
            "createdAt": "2026-11-24T20:44:00.123Z",
            "apiKey": "mk_test_0123abcd",
            "code": "ac_01JDKXA1B2C3D4E5F6G7H8J9K0_f00d",
            "recipient": "+15551234567",
            "email": "owner-123456789@shop.example",
            "url": "http://127.0.0.1:41234/hooks",
            "link": "http://dashboard.test/verify-email?token=abc-def&x=1",
            "redirect": "https://shop.example/cb?code=ac_1_2&state=st-42",
            "publicKey": {
                "challenge": "q83vEjRWeJq83vEjRWeJq83vEjRWeJ",
                "rp": {"id": "localhost"},
                "allowCredentials": [{"id": "AAECAwQFBgcICQoLDA0ODw", "type": "public-key"}],
            },
            "message": "must be an E.164 phone number such as +15551234567",
            "durationMs": 12,
            "status": "pending",
            "amount": 19.99,
        });
        assert_eq!(
            redacted(&body),
            json!({
                "sessionId": "cs_[id]",
                "createdAt": "[timestamp]",
                "apiKey": "mk_test_[secret]",
                "code": "ac_[secret]",
                "recipient": "[phone]",
                "email": "owner-#@shop.example",
                "url": "http://127.0.0.1:[port]/hooks",
                "link": "http://dashboard.test/verify-email?token=[token]&x=1",
                "redirect": "https://shop.example/cb?code=[secret]&state=st-42",
                "publicKey": {
                    "challenge": "[opaque]",
                    "rp": {"id": "localhost"},
                    "allowCredentials": [{"id": "[opaque]", "type": "public-key"}],
                },
                "message": "must be an E.164 phone number such as +15551234567",
                "durationMs": "[durationMs]",
                "status": "pending",
                "amount": 19.99,
            })
        );
    }
}
