#![doc = include_str!("../README.md")]

mod access_tokens;
mod app_tokens;
mod id_tokens;
mod key_ring;

pub use access_tokens::Es256TokenSigner;
pub use app_tokens::HmacAppTokens;
pub use key_ring::{
    DEFAULT_TOKEN_LIFETIME, Es256KeyGenerator, Es256KeyRing, KeyRingEntry, KeyRingError, StoredKey,
};

use std::fmt;

use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{MerchantId, MerchantUserId, TypedId};
use idconsent_merchant::model::Role;
use idconsent_merchant::ports::{SessionClaims, SessionTokens, TokenError};
use josekit::jws::alg::hmac::{HmacJwsSigner, HmacJwsVerifier};
use josekit::jws::{HS256, JwsHeader};
use josekit::jwt::{self, JwtPayload};
use serde_json::Value;

const ISSUER: &str = "idconsent";
const SESSION_TYPE: &str = "merchant-session";

/// Merchant session tokens: HS256 JWTs.
pub struct HmacSessionTokens {
    signer: HmacJwsSigner,
    verifier: HmacJwsVerifier,
}

impl HmacSessionTokens {
    /// `key`: 32 bytes derived from the master key for this purpose only.
    pub fn new(key: &[u8; 32]) -> Result<Self, TokenError> {
        let signer = HS256
            .signer_from_bytes(key)
            .map_err(|error| TokenError::Issue(error.to_string()))?;
        let verifier = HS256
            .verifier_from_bytes(key)
            .map_err(|error| TokenError::Issue(error.to_string()))?;
        Ok(Self { signer, verifier })
    }
}

impl fmt::Debug for HmacSessionTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacSessionTokens")
    }
}

impl SessionTokens for HmacSessionTokens {
    fn issue(&self, claims: &SessionClaims) -> Result<String, TokenError> {
        let mut header = JwsHeader::new();
        header.set_token_type("JWT");
        let mut payload = JwtPayload::new();
        payload.set_issuer(ISSUER);
        payload.set_subject(claims.user.as_str());
        let set = |payload: &mut JwtPayload, key: &str, value: Value| {
            payload
                .set_claim(key, Some(value))
                .map_err(|error| TokenError::Issue(error.to_string()))
        };
        set(&mut payload, "typ", SESSION_TYPE.into())?;
        set(&mut payload, "mid", claims.merchant.as_str().into())?;
        set(&mut payload, "role", claims.role.as_str().into())?;
        set(&mut payload, "iat", claims.issued_at.as_secs().into())?;
        set(&mut payload, "exp", claims.expires_at.as_secs().into())?;
        // Milliseconds too, so expiry is exact to the millisecond our clock uses.
        set(&mut payload, "exp_ms", claims.expires_at.as_millis().into())?;
        jwt::encode_with_signer(&payload, &header, &self.signer)
            .map_err(|error| TokenError::Issue(error.to_string()))
    }

    fn verify(&self, token: &str, now: Timestamp) -> Result<SessionClaims, TokenError> {
        let (payload, _) =
            jwt::decode_with_verifier(token, &self.verifier).map_err(|_| TokenError::Invalid)?;
        let text = |key: &str| payload.claim(key).and_then(Value::as_str);
        let number = |key: &str| payload.claim(key).and_then(Value::as_i64);
        if payload.issuer() != Some(ISSUER) || text("typ") != Some(SESSION_TYPE) {
            return Err(TokenError::Invalid);
        }
        let user = payload
            .subject()
            .and_then(|sub| MerchantUserId::parse(sub).ok())
            .ok_or(TokenError::Invalid)?;
        let merchant = text("mid")
            .and_then(|mid| MerchantId::parse(mid).ok())
            .ok_or(TokenError::Invalid)?;
        let role = text("role")
            .and_then(Role::parse)
            .ok_or(TokenError::Invalid)?;
        let expires_at = number("exp_ms")
            .map(Timestamp::from_millis)
            .ok_or(TokenError::Invalid)?;
        let issued_at = number("iat")
            .map(|secs| Timestamp::from_millis(secs.saturating_mul(1000)))
            .ok_or(TokenError::Invalid)?;
        if now >= expires_at {
            return Err(TokenError::Expired);
        }
        Ok(SessionClaims {
            user,
            merchant,
            role,
            issued_at,
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> SessionClaims {
        SessionClaims {
            user: MerchantUserId::parse("usr_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            merchant: MerchantId::parse("mer_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            role: Role::Developer,
            issued_at: Timestamp::from_millis(1_763_719_200_000),
            expires_at: Timestamp::from_millis(1_763_722_800_000),
        }
    }

    #[test]
    fn tokens_round_trip_until_they_expire() {
        let tokens = HmacSessionTokens::new(&[3; 32]).unwrap();
        let token = tokens.issue(&claims()).unwrap();
        assert_eq!(token.split('.').count(), 3);
        let now = Timestamp::from_millis(1_763_719_300_000);
        assert_eq!(tokens.verify(&token, now).unwrap(), claims());
        assert_eq!(
            tokens.verify(&token, Timestamp::from_millis(1_763_722_800_000)),
            Err(TokenError::Expired)
        );
    }

    #[test]
    fn foreign_or_altered_tokens_are_invalid() {
        let tokens = HmacSessionTokens::new(&[3; 32]).unwrap();
        let other = HmacSessionTokens::new(&[4; 32]).unwrap();
        let token = tokens.issue(&claims()).unwrap();
        let now = Timestamp::from_millis(1_763_719_300_000);
        assert_eq!(other.verify(&token, now), Err(TokenError::Invalid));
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = parts[1].chars().rev().collect();
        assert_eq!(
            tokens.verify(&parts.join("."), now),
            Err(TokenError::Invalid)
        );
        assert_eq!(tokens.verify("garbage", now), Err(TokenError::Invalid));
        // An unsigned token ("alg": "none") is never accepted.
        let unsecured = jwt::encode_unsecured(&JwtPayload::new(), &JwsHeader::new()).unwrap();
        assert_eq!(tokens.verify(&unsecured, now), Err(TokenError::Invalid));
    }
}
