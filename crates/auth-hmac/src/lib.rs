#![doc = include_str!("../README.md")]

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_access::ports::RequestSignatures;
use ring::hmac;

/// What a client sends as `X-Signature`.
pub fn sign_request(secret: &[u8], api_key: &str, timestamp: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    hex::encode(hmac::sign(&key, &request_message(api_key, timestamp, body)).as_ref())
}

fn request_message(api_key: &str, timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(api_key.len() + timestamp.len() + body.len() + 2);
    message.extend_from_slice(api_key.as_bytes());
    message.push(b':');
    message.extend_from_slice(timestamp.as_bytes());
    message.push(b':');
    message.extend_from_slice(body);
    message
}

/// The `RequestSignatures` port on ring.
#[derive(Debug, Clone, Copy, Default)]
pub struct HmacRequestSignatures;

impl RequestSignatures for HmacRequestSignatures {
    fn verify(
        &self,
        secret: &[u8],
        api_key: &str,
        timestamp: &str,
        body: &[u8],
        signature: &str,
    ) -> bool {
        // Lowercase hex only (CONTRACT §2.1); anything else is simply not the signature.
        if signature.len() != 64
            || !signature
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return false;
        }
        let Ok(tag) = hex::decode(signature) else {
            return false;
        };
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
        hmac::verify(&key, &request_message(api_key, timestamp, body), &tag).is_ok()
    }
}

/// Why a webhook secret cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidWebhookSecret;

/// The HMAC key inside a `whsec_…` secret.
pub fn webhook_key(secret: &str) -> Result<Vec<u8>, InvalidWebhookSecret> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    BASE64.decode(encoded).map_err(|_| InvalidWebhookSecret)
}

/// The `webhook-signature` value for one secret: `v1,<base64>`.
pub fn sign_webhook(
    secret: &str,
    id: &str,
    timestamp_secs: i64,
    body: &[u8],
) -> Result<String, InvalidWebhookSecret> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, &webhook_key(secret)?);
    let tag = hmac::sign(&key, &webhook_message(id, timestamp_secs, body));
    Ok(format!("v1,{}", BASE64.encode(tag.as_ref())))
}

/// Whether any `v1,` signature in a (space-separated) `webhook-signature` header matches.
pub fn verify_webhook(
    secret: &str,
    id: &str,
    timestamp_secs: i64,
    body: &[u8],
    header: &str,
) -> bool {
    let Ok(key) = webhook_key(secret) else {
        return false;
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, &key);
    let message = webhook_message(id, timestamp_secs, body);
    header
        .split(' ')
        .filter_map(|candidate| candidate.strip_prefix("v1,"))
        .filter_map(|encoded| BASE64.decode(encoded).ok())
        .any(|tag| hmac::verify(&key, &message, &tag).is_ok())
}

/// The webhook domain's `WebhookSigner` port: one `v1,` signature per secret (the current one
/// and, during a rotation, the previous one), space-separated as Standard Webhooks allows.
#[derive(Debug, Clone, Copy, Default)]
pub struct HmacWebhookSigner;

impl idconsent_webhook::WebhookSigner for HmacWebhookSigner {
    fn signature_header(
        &self,
        secrets: &[String],
        id: &str,
        timestamp_secs: i64,
        body: &[u8],
    ) -> String {
        secrets
            .iter()
            .filter_map(|secret| sign_webhook(secret, id, timestamp_secs, body).ok())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn webhook_message(id: &str, timestamp_secs: i64, body: &[u8]) -> Vec<u8> {
    let timestamp = timestamp_secs.to_string();
    let mut message = Vec::with_capacity(id.len() + timestamp.len() + body.len() + 2);
    message.extend_from_slice(id.as_bytes());
    message.push(b'.');
    message.extend_from_slice(timestamp.as_bytes());
    message.push(b'.');
    message.extend_from_slice(body);
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn vectors() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/vectors/vectors.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn text<'a>(value: &'a Value, key: &str) -> &'a str {
        value[key].as_str().unwrap()
    }

    #[test]
    fn reproduces_the_request_signing_vector() {
        let vector = &vectors()["request_signing"];
        let (secret, key, timestamp, body) = (
            text(vector, "secret"),
            text(vector, "apiKey"),
            text(vector, "timestamp"),
            text(vector, "body"),
        );
        assert_eq!(
            String::from_utf8(request_message(key, timestamp, body.as_bytes())).unwrap(),
            text(vector, "signedPayload")
        );
        let signature = sign_request(secret.as_bytes(), key, timestamp, body.as_bytes());
        assert_eq!(signature, text(vector, "signature"));
        assert_eq!(
            sign_request(secret.as_bytes(), key, timestamp, b""),
            text(vector, "emptyBodySignature")
        );
        let port = HmacRequestSignatures;
        assert!(port.verify(
            secret.as_bytes(),
            key,
            timestamp,
            body.as_bytes(),
            &signature
        ));
        assert!(port.verify(
            secret.as_bytes(),
            key,
            timestamp,
            b"",
            text(vector, "emptyBodySignature")
        ));
    }

    #[test]
    fn any_change_breaks_the_request_signature() {
        let vector = &vectors()["request_signing"];
        let (secret, key, timestamp, body) = (
            text(vector, "secret").as_bytes(),
            text(vector, "apiKey"),
            text(vector, "timestamp"),
            text(vector, "body").as_bytes(),
        );
        let signature = text(vector, "signature");
        let port = HmacRequestSignatures;
        // The same JSON re-serialised with other whitespace is other bytes: refused.
        let reserialised =
            serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(body).unwrap()).unwrap();
        assert!(!port.verify(secret, key, timestamp, &reserialised, signature));
        assert!(!port.verify(secret, key, "1763719200001", body, signature));
        assert!(!port.verify(b"sk_other", key, timestamp, body, signature));
        assert!(!port.verify(secret, key, timestamp, body, &signature.to_uppercase()));
        assert!(!port.verify(secret, key, timestamp, body, "not hex"));
        assert!(!port.verify(secret, key, timestamp, body, &signature[..62]));
    }

    #[test]
    fn reproduces_the_webhook_signing_vector() {
        let vector = &vectors()["webhook_signing"];
        let secret = text(vector, "secret");
        let id = text(vector, "webhookId");
        let timestamp: i64 = text(vector, "webhookTimestamp").parse().unwrap();
        let body = text(vector, "body").as_bytes();
        let header = sign_webhook(secret, id, timestamp, body).unwrap();
        assert_eq!(header, text(vector, "signatureHeader"));
        assert!(verify_webhook(secret, id, timestamp, body, &header));
        assert!(verify_webhook(
            secret,
            id,
            timestamp,
            body,
            &format!("v1,bm90IGl0 {header}")
        ));
        assert!(!verify_webhook(secret, id, timestamp + 1, body, &header));
        assert!(!verify_webhook(
            secret,
            "evt_other",
            timestamp,
            body,
            &header
        ));
    }

    #[test]
    fn during_a_rotation_both_secrets_sign() {
        use idconsent_webhook::WebhookSigner;
        let vector = &vectors()["webhook_signing"];
        let current = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let previous = text(vector, "secret");
        let header = HmacWebhookSigner.signature_header(
            &[current.into(), previous.into()],
            "evt_1",
            1,
            b"{}",
        );
        assert_eq!(header.split(' ').count(), 2);
        assert!(verify_webhook(current, "evt_1", 1, b"{}", &header));
        assert!(verify_webhook(previous, "evt_1", 1, b"{}", &header));
    }
}
