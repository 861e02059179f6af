//! End-user (mobile app) access tokens: HS256 JWTs, 15 minutes, bound to a device and to the
//! `X-Device-ID` they were issued for (CONTRACT §2.4).

use std::fmt;

use idconsent_enduser::ports::{AccessClaims, AccessTokenError, AccessTokens};
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{DeviceId, EndUserId, RefreshFamilyId, TypedId};
use josekit::jws::alg::hmac::{HmacJwsSigner, HmacJwsVerifier};
use josekit::jws::{HS256, JwsHeader};
use josekit::jwt::{self, JwtPayload};
use serde_json::Value;

const ISSUER: &str = "idconsent";
const APP_TYPE: &str = "app-access";

pub struct HmacAppTokens {
    signer: HmacJwsSigner,
    verifier: HmacJwsVerifier,
}

impl HmacAppTokens {
    /// `key`: 32 bytes derived from the master key for this purpose only (never the merchant
    /// session key, so one kind of token can never pass for the other).
    pub fn new(key: &[u8; 32]) -> Result<Self, AccessTokenError> {
        let issue = |error: josekit::JoseError| AccessTokenError::Issue(error.to_string());
        Ok(Self {
            signer: HS256.signer_from_bytes(key).map_err(issue)?,
            verifier: HS256.verifier_from_bytes(key).map_err(issue)?,
        })
    }
}

impl fmt::Debug for HmacAppTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacAppTokens")
    }
}

impl AccessTokens for HmacAppTokens {
    fn issue(&self, claims: &AccessClaims) -> Result<String, AccessTokenError> {
        let mut header = JwsHeader::new();
        header.set_token_type("JWT");
        let mut payload = JwtPayload::new();
        payload.set_issuer(ISSUER);
        payload.set_subject(claims.user.as_str());
        let fields: [(&str, Value); 7] = [
            ("typ", APP_TYPE.into()),
            ("dev", claims.device.as_str().into()),
            ("fam", claims.family.as_str().into()),
            ("xdi", claims.installation.clone().into()),
            ("iat", claims.issued_at.as_secs().into()),
            ("exp", claims.expires_at.as_secs().into()),
            ("exp_ms", claims.expires_at.as_millis().into()),
        ];
        for (key, value) in fields {
            payload
                .set_claim(key, Some(value))
                .map_err(|error| AccessTokenError::Issue(error.to_string()))?;
        }
        jwt::encode_with_signer(&payload, &header, &self.signer)
            .map_err(|error| AccessTokenError::Issue(error.to_string()))
    }

    fn verify(&self, token: &str, now: Timestamp) -> Result<AccessClaims, AccessTokenError> {
        let (payload, _) = jwt::decode_with_verifier(token, &self.verifier)
            .map_err(|_| AccessTokenError::Invalid)?;
        let text = |key: &str| payload.claim(key).and_then(Value::as_str);
        let number = |key: &str| payload.claim(key).and_then(Value::as_i64);
        if payload.issuer() != Some(ISSUER) || text("typ") != Some(APP_TYPE) {
            return Err(AccessTokenError::Invalid);
        }
        let claims = AccessClaims {
            user: payload
                .subject()
                .and_then(|sub| EndUserId::parse(sub).ok())
                .ok_or(AccessTokenError::Invalid)?,
            device: text("dev")
                .and_then(|dev| DeviceId::parse(dev).ok())
                .ok_or(AccessTokenError::Invalid)?,
            family: text("fam")
                .and_then(|fam| RefreshFamilyId::parse(fam).ok())
                .ok_or(AccessTokenError::Invalid)?,
            installation: text("xdi").ok_or(AccessTokenError::Invalid)?.to_owned(),
            issued_at: number("iat")
                .map(|secs| Timestamp::from_millis(secs.saturating_mul(1000)))
                .ok_or(AccessTokenError::Invalid)?,
            expires_at: number("exp_ms")
                .map(Timestamp::from_millis)
                .ok_or(AccessTokenError::Invalid)?,
        };
        if now >= claims.expires_at {
            return Err(AccessTokenError::Invalid);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn claims() -> AccessClaims {
        AccessClaims {
            user: EndUserId::parse("eu_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            device: DeviceId::parse("dev_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            family: RefreshFamilyId::parse("rtf_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
            installation: "phone-1".into(),
            issued_at: Timestamp::from_millis(1_763_719_200_000),
            expires_at: Timestamp::from_millis(1_763_720_100_000),
        }
    }

    #[test]
    fn app_tokens_round_trip_until_they_expire() {
        let tokens = HmacAppTokens::new(&[5; 32]).unwrap();
        let token = tokens.issue(&claims()).unwrap();
        let now = Timestamp::from_millis(1_763_719_300_000);
        assert_eq!(tokens.verify(&token, now).unwrap(), claims());
        assert!(
            tokens
                .verify(&token, Timestamp::from_millis(1_763_720_100_000))
                .is_err()
        );
    }

    #[test]
    fn merchant_session_tokens_are_not_app_tokens() {
        // Same key on purpose: the type claim alone must keep the two apart.
        let app = HmacAppTokens::new(&[5; 32]).unwrap();
        let merchant = crate::HmacSessionTokens::new(&[5; 32]).unwrap();
        let session = idconsent_merchant::ports::SessionTokens::issue(
            &merchant,
            &idconsent_merchant::ports::SessionClaims {
                user: idconsent_kernel::id::MerchantUserId::parse("usr_01JDKX9Q6N8V3T5R7W2Y4Z6B8C")
                    .unwrap(),
                merchant: idconsent_kernel::id::MerchantId::parse("mer_01JDKX9Q6N8V3T5R7W2Y4Z6B8C")
                    .unwrap(),
                role: idconsent_merchant::model::Role::Owner,
                issued_at: Timestamp::from_millis(1_763_719_200_000),
                expires_at: Timestamp::from_millis(1_763_720_100_000),
            },
        )
        .unwrap();
        let now = Timestamp::from_millis(1_763_719_300_000);
        assert!(app.verify(&session, now).is_err());
        let other = HmacAppTokens::new(&[6; 32]).unwrap();
        assert!(other.verify(&app.issue(&claims()).unwrap(), now).is_err());
    }
}
