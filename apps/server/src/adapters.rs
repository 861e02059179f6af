//! Adapters between domains, assembled at the composition root: one domain's port answered
//! with another domain's data.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_consent::{
    ConsentError, ConsentService, Decision, RecipientDirectory, Session, SessionStatus,
    StoreError as ConsentStoreError,
};
use idconsent_enduser::ports::{ApprovalTargets, EnrollmentRepository, Target, TargetError};
use idconsent_enduser::{Audience, Purpose, PurposeKind};
use idconsent_kernel::Intent;
use idconsent_kernel::id::ApplicationId;
use idconsent_kernel::{Clock, PhoneNumber, SecretVault};
use idconsent_merchant::ports::{ApplicationRepository, MerchantRepository, RepositoryError};
use idconsent_oauth::ports::{ClaimSource, StoreError as OAuthStoreError};
use idconsent_oauth::{ClaimKey, OAuthError, OAuthService, VerifiedValue};
use idconsent_webhook::{Outbox, SigningSecrets, StoreError};
use serde_json::{Value, json};

/// The webhook secrets an application signs with, opened from the merchant domain's store.
#[derive(Debug, Clone)]
pub struct ApplicationSigningSecrets {
    pub applications: Arc<dyn ApplicationRepository>,
    pub vault: Arc<dyn SecretVault>,
    pub clock: Arc<dyn Clock>,
}

#[async_trait]
impl SigningSecrets for ApplicationSigningSecrets {
    async fn for_application(
        &self,
        application: &ApplicationId,
    ) -> Result<Vec<String>, StoreError> {
        let application = self
            .applications
            .find(application)
            .await
            .map_err(|error| StoreError::Unavailable(Box::new(error)))?
            .ok_or(StoreError::NotFound)?;
        application
            .signing_webhook_secrets(self.clock.now())
            .into_iter()
            .map(|sealed| {
                let plain = self
                    .vault
                    .open(sealed)
                    .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
                String::from_utf8(plain)
                    .map_err(|_| StoreError::Unavailable("webhook secret is not text".into()))
            })
            .collect()
    }
}

/// Who may be asked in live: phones whose user completed an enrollment (CONTRACT §4).
#[derive(Debug, Clone)]
pub struct EnrolledRecipients {
    pub users: Arc<dyn EnrollmentRepository>,
}

#[async_trait]
impl RecipientDirectory for EnrolledRecipients {
    async fn is_enrolled(&self, phone: &PhoneNumber) -> Result<bool, ConsentStoreError> {
        let user = self
            .users
            .user_by_phone(phone)
            .await
            .map_err(|error| ConsentStoreError::Unavailable(Box::new(error)))?;
        Ok(user.is_some_and(|user| user.enrolled_at.is_some()))
    }
}

/// The objects a FIDO purpose names, answered by their domains: consent sessions now;
/// mandates and signature requests when those domains exist (until then "not found").
#[derive(Debug, Clone)]
pub struct PurposeTargets {
    pub consents: Arc<ConsentService>,
    pub oauth: Arc<OAuthService>,
    pub applications: Arc<dyn ApplicationRepository>,
    pub merchants: Arc<dyn MerchantRepository>,
}

impl PurposeTargets {
    async fn session(&self, purpose: &Purpose) -> Result<Session, TargetError> {
        if purpose.kind != PurposeKind::Consent {
            return Err(TargetError::NotFound);
        }
        self.consents
            .load(purpose.id.as_deref().unwrap_or_default())
            .await
            .map_err(|error| match error {
                ConsentError::NotFound(_) => TargetError::NotFound,
                other => TargetError::Unavailable(Box::new(other)),
            })
    }
}

/// A session's events go to its callback URL, for its application and environment.
fn audience_of(session: &Session) -> Audience {
    Audience {
        application_id: session.application_id.clone(),
        environment: session.environment,
        callback_url: session.callback_url.clone(),
    }
}

#[async_trait]
impl ApprovalTargets for PurposeTargets {
    async fn describe(&self, purpose: &Purpose) -> Result<Target, TargetError> {
        let session = self.session(purpose).await?;
        let status = session.status_at(self.consents.now());
        if status != SessionStatus::Pending {
            return Err(TargetError::NotPending(format!(
                "The session is already {}",
                status.as_str()
            )));
        }
        let unavailable = |error: RepositoryError| TargetError::Unavailable(Box::new(error));
        let application = self
            .applications
            .find(&session.application_id)
            .await
            .map_err(unavailable)?
            .ok_or(TargetError::NotFound)?;
        let merchant = self
            .merchants
            .find(&application.merchant_id)
            .await
            .map_err(unavailable)?
            .ok_or(TargetError::NotFound)?;
        let shown = session.to_json(self.consents.now());
        let mut context = json!({
                "type": "consent",
                "sessionId": session.id,
                "merchant": merchant.business_name,
                "application": application.name,
                "environment": session.environment.as_str(),
                "intent": session.intent.as_str(),
                "transaction": shown["transaction"],
                "expiresAt": session.expires_at.to_rfc3339(),
        });
        // An OAuth request also shows what would be shared.
        let request = self
            .oauth
            .request_of(&session)
            .await
            .map_err(|error| TargetError::Unavailable(Box::new(error)))?;
        if let (Some(request), Value::Object(fields)) = (request, &mut context) {
            let claims: Vec<&str> = request.claims.iter().map(|c| c.as_str()).collect();
            fields.insert("claims".into(), json!(claims));
            fields.insert("scopes".into(), json!(request.scopes));
            fields.insert("description".into(), json!(request.description));
        }
        Ok(Target {
            recipient: session.recipient.clone(),
            context,
            audience: Some(audience_of(&session)),
        })
    }

    async fn decide(
        &self,
        purpose: &Purpose,
        approve: bool,
        also: &(dyn for<'a> Fn(&'a Audience) -> Vec<Outbox> + Send + Sync),
    ) -> Result<String, TargetError> {
        let session = self.session(purpose).await?;
        let outbox = also(&audience_of(&session));
        let decision = if approve {
            Decision::Approve
        } else {
            Decision::Reject
        };
        let consent_error = |error: ConsentError| match error {
            ConsentError::Conflict(message) => TargetError::NotPending(message),
            ConsentError::NotFound(_) => TargetError::NotFound,
            other => TargetError::Unavailable(Box::new(other)),
        };
        let decided = if session.intent == Intent::Oauth {
            self.oauth
                .decide(session, decision, outbox)
                .await
                .map_err(|error| match error {
                    OAuthError::Consent(inner) => consent_error(inner),
                    OAuthError::NotFound(_) => TargetError::NotFound,
                    other => TargetError::Unavailable(Box::new(other)),
                })?
        } else {
            self.consents
                .decide(session, decision, None, outbox)
                .await
                .map_err(consent_error)?
        };
        Ok(decided.status.as_str().to_owned())
    }
}

/// The user's verified data for OAuth claims: the phone, proven by SMS code at enrollment.
/// Document claims join when identity verification exists.
#[derive(Debug, Clone)]
pub struct EnrolledClaims {
    pub users: Arc<dyn EnrollmentRepository>,
}

#[async_trait]
impl ClaimSource for EnrolledClaims {
    async fn verified(
        &self,
        phone: &PhoneNumber,
    ) -> Result<Vec<(ClaimKey, VerifiedValue)>, OAuthStoreError> {
        let user = self
            .users
            .user_by_phone(phone)
            .await
            .map_err(|error| OAuthStoreError::Unavailable(Box::new(error)))?;
        Ok(user
            .and_then(|user| user.enrolled_at.map(|at| (user.phone, at)))
            .map(|(phone, enrolled_at)| {
                vec![(
                    ClaimKey::PhoneNumber,
                    VerifiedValue {
                        value: phone.as_str().into(),
                        source: "sms_otp",
                        verified_at: enrolled_at,
                    },
                )]
            })
            .unwrap_or_default())
    }
}
