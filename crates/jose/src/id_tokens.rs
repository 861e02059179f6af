//! OpenID Connect ID tokens: ES256 JWTs of type `JWT`, signed with the same active key as the
//! access tokens, so one JWKS (`/.well-known/jwks.json`) verifies both. The type differs
//! (`JWT`, not `at+jwt`), so an ID token is never accepted as an access token (RFC 9068 §4).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_oidc::ports::{IdTokenSigner, SignError};
use serde::Serialize;
use serde_json::Value;

use crate::Es256TokenSigner;
use crate::key_ring::ES256_SIGNATURE_LEN;

#[derive(Serialize)]
struct Header<'a> {
    alg: &'static str,
    typ: &'static str,
    kid: &'a str,
}

impl IdTokenSigner for Es256TokenSigner {
    fn sign_id_token(&self, claims: &Value) -> Result<String, SignError> {
        let ring = self.ring();
        let active = ring.active_key();
        let header = serde_json::to_vec(&Header {
            alg: "ES256",
            typ: "JWT",
            kid: ring.active_kid(),
        })
        .map_err(|error| SignError(error.to_string()))?;
        let payload = serde_json::to_vec(claims).map_err(|error| SignError(error.to_string()))?;
        let mut token = URL_SAFE_NO_PAD.encode(header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(&payload, &mut token);
        let signature = active
            .material
            .signer
            .sign(&active.material.random, token.as_bytes())
            .map_err(|_| SignError("ES256 signing failed".into()))?;
        if signature.as_ref().len() != ES256_SIGNATURE_LEN {
            return Err(SignError("unexpected ES256 signature length".into()));
        }
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut token);
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use idconsent_kernel::{SystemClock, Timestamp};
    use idconsent_oidc::ports::IdTokenSigner;
    use josekit::jws::{ES256, JwsHeader, JwsVerifier};
    use serde_json::json;

    use crate::{Es256KeyRing, Es256TokenSigner};

    #[test]
    fn an_id_token_verifies_against_the_published_key_and_is_typed_jwt() {
        let dir = tempfile::tempdir().unwrap();
        let ring = Es256KeyRing::open_or_create(dir.path(), Timestamp::from_millis(0)).unwrap();
        let signer = Es256TokenSigner::new(ring, "https://id.example", Arc::new(SystemClock));
        let claims = json!({"iss": "https://id.example", "sub": "abc", "nonce": "n-0S6"});
        let token = signer.sign_id_token(&claims).unwrap();

        let jwks = idconsent_oauth::ports::TokenSigner::jwks(&signer);
        let jwk =
            josekit::jwk::Jwk::from_map(jwks["keys"][0].as_object().unwrap().clone()).unwrap();
        let verifier = ES256.verifier_from_jwk(&jwk).unwrap();
        let (payload, header): (Vec<u8>, JwsHeader) =
            josekit::jws::deserialize_compact(&token, &verifier as &dyn JwsVerifier).unwrap();
        assert_eq!(header.token_type(), Some("JWT"));
        assert_eq!(header.key_id(), jwk.key_id());
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&payload).unwrap(),
            claims
        );
        // Not an access token: the access-token verifier refuses it.
        assert!(
            idconsent_oauth::ports::TokenSigner::verify(&signer, &token, Timestamp::from_millis(1))
                .is_err()
        );
    }
}
