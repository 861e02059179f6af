//! OAuth access tokens (CONTRACT §5): ES256 JWTs of type `at+jwt` (RFC 9068), signed with the
//! active key of an [`Es256KeyRing`] and verifiable by anyone against its JWKS.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_kernel::{Clock, Timestamp};
use idconsent_oauth::ports::{AccessTokenClaims, TokenError, TokenSigner};
use josekit::JoseError;
use josekit::jws::{JwsHeader, JwsVerifier};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::key_ring::{ES256_SIGNATURE_LEN, Es256KeyRing, KeyRingError, TOKEN_TYPE};

/// The `TokenSigner` port on an [`Es256KeyRing`]: RFC 9068 access tokens.
///
/// Header `{"alg":"ES256","typ":"at+jwt","kid":…}`; payload `iss`, `sub`, `aud` and `client_id`
/// (both the client ID), `scope` (space-separated), `jti`, `iat` and `exp` (seconds), plus
/// `iat_ms` / `exp_ms` when those instants are not whole seconds, so that `verify` gives back the
/// exact claims. `verify` accepts only ES256 signatures by a key the ring publishes at `now`
/// (named by `kid`), of type `at+jwt`, from this issuer, before `exp`.
pub struct Es256TokenSigner {
    issuer: String,
    clock: Arc<dyn Clock>,
    ring: RwLock<Arc<Es256KeyRing>>,
}

impl fmt::Debug for Es256TokenSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Es256TokenSigner")
            .field("issuer", &self.issuer)
            .field("active_kid", &self.read_ring().active_kid())
            .finish_non_exhaustive()
    }
}

impl Es256TokenSigner {
    /// `clock` decides which retired keys [`TokenSigner::jwks`] still publishes.
    pub fn new(ring: Es256KeyRing, issuer: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            issuer: issuer.into(),
            clock,
            ring: RwLock::new(Arc::new(ring)),
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The ring as it is now.
    pub fn ring(&self) -> Arc<Es256KeyRing> {
        Arc::clone(&self.read_ring())
    }

    /// Rotates the ring (see [`Es256KeyRing::rotate`]) and signs with the new key from now on.
    pub fn rotate(&self, now: Timestamp) -> Result<String, KeyRingError> {
        let mut guard = self.ring.write().unwrap_or_else(PoisonError::into_inner);
        let mut ring = Es256KeyRing::clone(&guard);
        let kid = ring.rotate(now)?;
        *guard = Arc::new(ring);
        Ok(kid)
    }

    /// Swaps in another ring, e.g. the directory reopened after another process rotated it.
    pub fn replace_ring(&self, ring: Es256KeyRing) {
        *self.ring.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(ring);
    }

    fn read_ring(&self) -> RwLockReadGuard<'_, Arc<Es256KeyRing>> {
        // The ring behind the lock is immutable, so a writer's panic cannot leave it half-made.
        self.ring.read().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The claims as written: borrowed, so signing copies nothing but the JSON itself.
#[derive(Serialize)]
struct SignedPayload<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    client_id: &'a str,
    scope: ScopeList<'a>,
    jti: &'a str,
    iat: i64,
    exp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    iat_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp_ms: Option<i64>,
}

/// Scopes written as one space-separated string without building it first.
struct ScopeList<'a>(&'a [String]);

impl fmt::Display for ScopeList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, scope) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(" ")?;
            }
            f.write_str(scope)?;
        }
        Ok(())
    }
}

impl Serialize for ScopeList<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Deserialize)]
struct ReadPayload {
    iss: String,
    sub: String,
    aud: String,
    client_id: String,
    scope: String,
    jti: String,
    iat: i64,
    exp: i64,
    iat_ms: Option<i64>,
    exp_ms: Option<i64>,
}

/// The milliseconds of `instant` when it is not a whole second (else `exp`/`iat` say it all).
fn sub_second_millis(instant: Timestamp) -> Option<i64> {
    (instant.as_millis().rem_euclid(1000) != 0).then_some(instant.as_millis())
}

/// The instant of a seconds claim and its optional milliseconds companion, which must agree.
fn instant(secs: i64, millis: Option<i64>) -> Option<Timestamp> {
    match millis {
        Some(millis) if millis.div_euclid(1000) == secs => Some(Timestamp::from_millis(millis)),
        Some(_) => None,
        None => secs.checked_mul(1000).map(Timestamp::from_millis),
    }
}

fn is_access_token_type(typ: &str) -> bool {
    typ.eq_ignore_ascii_case(TOKEN_TYPE) || typ.eq_ignore_ascii_case("application/at+jwt")
}

impl TokenSigner for Es256TokenSigner {
    fn sign(&self, claims: &AccessTokenClaims) -> Result<String, TokenError> {
        if claims.issuer != self.issuer {
            return Err(TokenError::Sign(format!(
                "issuer {:?} is not this signer's {:?}",
                claims.issuer, self.issuer
            )));
        }
        if let Some(scope) = claims
            .scopes
            .iter()
            .find(|scope| scope.is_empty() || scope.contains(' '))
        {
            return Err(TokenError::Sign(format!("invalid scope {scope:?}")));
        }
        let ring = self.read_ring();
        // A longer-lived token could outlive its key's place in the JWKS after a rotation.
        if claims.expires_at > claims.issued_at.plus(ring.token_lifetime) {
            return Err(TokenError::Sign(format!(
                "lifetime exceeds the key ring's {:?}",
                ring.token_lifetime
            )));
        }
        let key = &ring.active_key().material;
        let payload = SignedPayload {
            iss: &claims.issuer,
            sub: &claims.subject,
            aud: &claims.audience,
            client_id: &claims.audience,
            scope: ScopeList(&claims.scopes),
            jti: &claims.token_id,
            iat: claims.issued_at.as_secs(),
            exp: claims.expires_at.as_secs(),
            iat_ms: sub_second_millis(claims.issued_at),
            exp_ms: sub_second_millis(claims.expires_at),
        };
        let mut json = Vec::with_capacity(320);
        serde_json::to_writer(&mut json, &payload)
            .map_err(|error| TokenError::Sign(error.to_string()))?;

        let encoded_len = |bytes: usize| bytes.div_ceil(3) * 4;
        let mut token = String::with_capacity(
            key.encoded_header.len() + 2 + encoded_len(json.len()) + encoded_len(64),
        );
        token.push_str(&key.encoded_header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(&json, &mut token);
        let signature = key
            .signer
            .sign(&key.random, token.as_bytes())
            .map_err(|_| TokenError::Sign("ES256 signing failed".into()))?;
        let signature = signature.as_ref();
        if signature.len() != ES256_SIGNATURE_LEN {
            return Err(TokenError::Sign("unexpected ES256 signature length".into()));
        }
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut token);
        Ok(token)
    }

    fn verify(&self, token: &str, now: Timestamp) -> Result<AccessTokenClaims, TokenError> {
        let ring = self.read_ring();
        // josekit checks that the header's `alg` is the selected verifier's (ES256 only, so
        // `none` and HS256 are refused), that its `kid` matches, and the signature.
        let selector = |header: &JwsHeader| -> Result<Option<&dyn JwsVerifier>, JoseError> {
            if header.claim("crit").is_some()
                || !header.token_type().is_some_and(is_access_token_type)
            {
                return Ok(None);
            }
            Ok(header
                .key_id()
                .and_then(|kid| ring.published_key(kid, now))
                .map(|key| &key.material.verifier as &dyn JwsVerifier))
        };
        let (payload, _) = josekit::jws::deserialize_compact_with_selector(token, selector)
            .map_err(|_| TokenError::Invalid)?;
        let payload: ReadPayload =
            serde_json::from_slice(&payload).map_err(|_| TokenError::Invalid)?;
        if payload.iss != self.issuer || payload.client_id != payload.aud {
            return Err(TokenError::Invalid);
        }
        let issued_at = instant(payload.iat, payload.iat_ms).ok_or(TokenError::Invalid)?;
        let expires_at = instant(payload.exp, payload.exp_ms).ok_or(TokenError::Invalid)?;
        if now >= expires_at {
            return Err(TokenError::Invalid);
        }
        Ok(AccessTokenClaims {
            issuer: payload.iss,
            audience: payload.aud,
            subject: payload.sub,
            scopes: payload
                .scope
                .split(' ')
                .filter(|scope| !scope.is_empty())
                .map(str::to_owned)
                .collect(),
            token_id: payload.jti,
            issued_at,
            expires_at,
        })
    }

    fn jwks(&self) -> Value {
        self.read_ring().jwks(self.clock.now())
    }
}
