//! Mandates as objects a recipient approves in the app (purpose `mandate`).
//!
//! A mandate can change after a challenge was issued (a PUT), so a decision is applied only if
//! the mandate, as it is when the decision is stored, still has the context the assertion
//! committed to: a recipient never authorises terms they were not shown.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_approval::commitment::context_hash;
use idconsent_approval::{
    AlsoFn, ApplicationDirectory, ApplicationNames, ApprovalTarget, Approver, Audience, Decision,
    Line, PurposeKind, Shown, Target, TargetError, Words, amount,
};
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::MandateId;
use serde::Serialize;
use serde_json::Value;

use crate::error::MandateError;
use crate::events::TermsBody;
use crate::model::{Mandate, MandateStatus, Terms};
use crate::service::MandateService;

/// What the app shows for a mandate, and what its FIDO challenge commits to (SHA-256 of the
/// canonical JSON, ADR 0006). Built only here, from the stored mandate and the current names.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MandateContext<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    mandate_id: &'a MandateId,
    merchant: &'a str,
    application: &'a str,
    /// `sandbox` or `live`.
    environment: &'static str,
    mandate_type: &'static str,
    description: &'a str,
    terms: TermsBody<'a>,
    /// On a re-authorisation: the terms authorised so far (old → new).
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_terms: Option<TermsBody<'a>>,
    expires_at: Option<Timestamp>,
}

impl<'a> MandateContext<'a> {
    pub fn of(mandate: &'a Mandate, names: &'a ApplicationNames) -> Self {
        Self {
            kind: "mandate",
            mandate_id: &mandate.id,
            merchant: &names.merchant,
            application: &names.application,
            environment: mandate.environment.as_str(),
            mandate_type: mandate.kind.as_str(),
            description: &mandate.description,
            terms: TermsBody::of(&mandate.terms),
            previous_terms: mandate.authorized_terms.as_ref().map(TermsBody::of),
            expires_at: mandate.authorization_deadline,
        }
    }

    pub fn to_value(&self) -> Result<Value, TargetError> {
        serde_json::to_value(self).map_err(|error| TargetError::Unavailable(Box::new(error)))
    }
}

/// `up to 49.90 EUR, monthly` / `no maximum amount`.
fn terms_text(terms: &Terms) -> String {
    let amount = match &terms.amount {
        Some(money) => format!("up to {}", amount(money)),
        None => "no maximum amount".to_owned(),
    };
    match terms.frequency {
        Some(frequency) => format!("{amount}, {}", frequency.as_str()),
        None => amount,
    }
}

/// What the recipient reads: the terms (old and new on a re-authorisation), who asks, and in
/// the sandbox that nothing is charged.
pub fn shown(mandate: &Mandate, names: &ApplicationNames) -> Shown {
    let mut lines = vec![Line::plain("description", mandate.description.clone())];
    match &mandate.authorized_terms {
        Some(previous) => {
            lines.push(Line::labelled(
                "terms",
                "New terms",
                terms_text(&mandate.terms),
            ));
            lines.push(Line::labelled(
                "previous-terms",
                "Authorised so far",
                terms_text(previous),
            ));
        }
        None => lines.push(Line::labelled("terms", "Terms", terms_text(&mandate.terms))),
    }
    let notes = match mandate.environment {
        idconsent_kernel::Environment::Sandbox => {
            vec!["Sandbox: a test mandate, nothing is charged.".to_owned()]
        }
        idconsent_kernel::Environment::Live => vec![],
    };
    Shown {
        title: format!("Authorise a {}", mandate.kind.as_str().replace('_', " ")),
        requester: Some(format!("{} · {}", names.application, names.merchant)),
        lines,
        notes,
        words: Words {
            question: "Do you authorise this mandate?".into(),
            approve: "Authorise".into(),
            reject: "Decline".into(),
            approved: "Mandate authorised.".into(),
            declined: "Mandate declined.".into(),
        },
    }
}

/// The [`ApprovalTarget`] of mandates.
#[derive(Debug, Clone)]
pub struct MandateApprovals {
    mandates: Arc<MandateService>,
    directory: Arc<dyn ApplicationDirectory>,
}

impl MandateApprovals {
    /// The purpose kind this domain serves (`purpose.type`: `mandate`).
    pub const KIND: PurposeKind = PurposeKind::declared("mandate");

    pub fn new(mandates: Arc<MandateService>, directory: Arc<dyn ApplicationDirectory>) -> Self {
        Self {
            mandates,
            directory,
        }
    }

    async fn names(&self, mandate: &Mandate) -> Result<ApplicationNames, TargetError> {
        self.directory
            .names(&mandate.application_id)
            .await
            .map_err(|error| TargetError::Unavailable(Box::new(error)))?
            .ok_or(TargetError::NotFound)
    }
}

/// A mandate's events go to its callback URL (its own, else its application's).
pub fn audience_of(mandate: &Mandate) -> Option<Audience> {
    mandate.callback_url.as_ref().map(|url| Audience {
        application_id: mandate.application_id.clone(),
        environment: mandate.environment,
        callback_url: url.clone(),
    })
}

fn target_error(error: MandateError) -> TargetError {
    match error {
        MandateError::NotFound(_) => TargetError::NotFound,
        MandateError::Conflict(message) => TargetError::NotPending(message),
        MandateError::QuotaExceeded { quota, .. } => TargetError::Quota(quota),
        other => TargetError::Unavailable(Box::new(other)),
    }
}

fn hash_hex(context: &Value) -> String {
    hex::encode(context_hash(context))
}

#[async_trait]
impl ApprovalTarget for MandateApprovals {
    fn kind(&self) -> PurposeKind {
        Self::KIND
    }

    async fn describe(&self, id: &str) -> Result<Target, TargetError> {
        let mandate = self.mandates.load(id).await.map_err(target_error)?;
        let status = mandate.status_at(self.mandates.now());
        if status != MandateStatus::PendingAuthorization {
            return Err(TargetError::NotPending(format!(
                "The mandate is {}",
                status.as_str()
            )));
        }
        let names = self.names(&mandate).await?;
        Ok(Target {
            canonical_id: mandate.id.to_string(),
            recipient: mandate.recipient.clone(),
            context: MandateContext::of(&mandate, &names).to_value()?,
            page: None,
            audience: audience_of(&mandate),
            shown: shown(&mandate, &names),
            // A mandate authorises future debits: always with a passkey.
            passkey_required: true,
        })
    }

    async fn audience(&self, id: &str) -> Result<Option<Audience>, TargetError> {
        let mandate = self.mandates.load(id).await.map_err(target_error)?;
        Ok(audience_of(&mandate))
    }

    /// Approval activates (`mandate.signed`), rejection cancels — only while the mandate still
    /// reads as the context the assertion committed to.
    async fn decide(
        &self,
        id: &str,
        decision: Decision,
        by: &Approver,
        also: &AlsoFn<'_>,
    ) -> Result<String, TargetError> {
        let mandate = self.mandates.load(id).await.map_err(target_error)?;
        if !by.is(&mandate.recipient) {
            return Err(TargetError::NotFound);
        }
        let names = self.names(&mandate).await?;
        let committed = by.context_hash.clone();
        let check = move |current: &Mandate| -> Result<(), MandateError> {
            let context = MandateContext::of(current, &names)
                .to_value()
                .map_err(|error| MandateError::Unavailable(Box::new(error)))?;
            match &committed {
                Some(committed) if *committed != hash_hex(&context) => Err(MandateError::Conflict(
                    "The mandate changed after this challenge was issued; start a new one".into(),
                )),
                _ => Ok(()),
            }
        };
        let also = audience_of(&mandate)
            .map(|audience| also(&audience))
            .unwrap_or_default();
        let decided = self
            .mandates
            .decide(mandate, decision, &check, also)
            .await
            .map_err(target_error)?;
        Ok(decided.status.as_str().to_owned())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use idconsent_approval::commitment::canonical_json;

    use super::*;
    use crate::model::tests::{at, pending, usd};
    use crate::model::{Changes, Frequency};

    fn names() -> ApplicationNames {
        ApplicationNames {
            merchant: "Gym Co".into(),
            application: "Members".into(),
        }
    }

    #[test]
    fn the_context_shows_the_terms_and_on_re_authorisation_the_old_ones() {
        let names = names();
        let mut mandate = pending();
        let shown = MandateContext::of(&mandate, &names).to_value().unwrap();
        assert_eq!(
            String::from_utf8(canonical_json(&shown)).unwrap(),
            r#"{"application":"Members","description":"Gym membership","environment":"sandbox","expiresAt":"1970-01-08T00:00:00.000Z","mandateId":"md_1","mandateType":"direct_debit","merchant":"Gym Co","terms":{"amount":50.0,"currency":"USD","frequency":"monthly"},"type":"mandate"}"#
        );

        mandate.approve(at(1)).unwrap();
        mandate
            .change(
                &Changes {
                    amount: Some(Some(usd(7_500))),
                    frequency: Some(Some(Frequency::Weekly)),
                    ..Changes::default()
                },
                at(2),
            )
            .unwrap();
        let shown = MandateContext::of(&mandate, &names).to_value().unwrap();
        assert_eq!(
            shown["previousTerms"],
            serde_json::json!({"amount": 50.0, "currency": "USD", "frequency": "monthly"})
        );
        assert_eq!(
            shown["terms"],
            serde_json::json!({"amount": 75.0, "currency": "USD", "frequency": "weekly"})
        );
    }

    #[test]
    fn any_change_of_what_is_shown_changes_the_hash() {
        let names = names();
        let mandate = pending();
        let hash =
            |mandate: &Mandate| hash_hex(&MandateContext::of(mandate, &names).to_value().unwrap());
        let mut described = mandate.clone();
        described
            .change(
                &Changes {
                    description: Some("Gym, family".into()),
                    ..Changes::default()
                },
                at(5),
            )
            .unwrap();
        assert_ne!(hash(&mandate), hash(&described));
        let mut other_amount = mandate.clone();
        other_amount.terms.amount = Some(usd(5_001));
        assert_ne!(hash(&mandate), hash(&other_amount));
    }
}
