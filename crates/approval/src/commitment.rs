//! How a FIDO challenge commits to what the user is shown.
//!
//! `challenge = SHA-256("idconsent-challenge-v1" ‖ nonce ‖ SHA-256(context JSON))`. The app
//! receives the context, the nonce and the challenge; it recomputes the challenge before asking
//! for the user's biometric, so a server (or anyone in between) cannot show one thing and have
//! the passkey sign another, and the signed assertion itself proves what was approved.

use serde_json::Value;
use sha2::{Digest, Sha256};

const DOMAIN: &[u8] = b"idconsent-challenge-v1";

/// SHA-256 of the context's canonical JSON ([`canonical_json`]).
pub fn context_hash(context: &Value) -> [u8; 32] {
    Sha256::digest(canonical_json(context)).into()
}

/// The context's canonical JSON: object keys sorted (by their UTF-8 bytes) at every level, no
/// whitespace, strings and numbers as serde_json writes them. Canonical so that a client hashes
/// the same bytes whatever order its JSON parser keeps keys in.
pub fn canonical_json(context: &Value) -> Vec<u8> {
    let mut canonical = Vec::with_capacity(256);
    write_canonical(context, &mut canonical);
    canonical
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(fields) => {
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort();
            out.push(b'{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(&Value::String(key.clone()), out);
                out.push(b':');
                if let Some(field) = fields.get(key) {
                    write_canonical(field, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend(serde_json::to_vec(scalar).unwrap_or_default()),
    }
}

/// The WebAuthn challenge for a context hash and a fresh nonce.
pub fn derive_challenge(nonce: &[u8; 32], context_hash: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(DOMAIN);
    hasher.update(nonce);
    hasher.update(context_hash);
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_challenge_changes_with_any_part_of_the_context() {
        let nonce = [1u8; 32];
        let shown = json!({"intent": "TRANSACTION", "amount": 10.5});
        let other = json!({"intent": "TRANSACTION", "amount": 10.51});
        assert_ne!(
            derive_challenge(&nonce, &context_hash(&shown)),
            derive_challenge(&nonce, &context_hash(&other))
        );
        assert_ne!(
            derive_challenge(&nonce, &context_hash(&shown)),
            derive_challenge(&[2u8; 32], &context_hash(&shown))
        );
        assert_eq!(
            derive_challenge(&nonce, &context_hash(&shown)),
            derive_challenge(&nonce, &context_hash(&shown.clone()))
        );
    }

    #[test]
    fn the_hash_ignores_key_order_but_not_content() {
        let one: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, "x"], "x": null}}"#).unwrap();
        let other: Value =
            serde_json::from_str(r#"{"a": {"x": null, "y": [1, "x"]}, "b": 1}"#).unwrap();
        assert_eq!(context_hash(&one), context_hash(&other));
        let mut canonical = Vec::new();
        write_canonical(&one, &mut canonical);
        assert_eq!(
            String::from_utf8(canonical).unwrap(),
            r#"{"a":{"x":null,"y":[1,"x"]},"b":1}"#
        );
        let changed: Value =
            serde_json::from_str(r#"{"a": {"x": null, "y": ["x", 1]}, "b": 1}"#).unwrap();
        assert_ne!(context_hash(&one), context_hash(&changed));
    }
}
