//! The composition root's map from purpose kinds to the domains that serve them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{Approver, Audience, Decision, Purpose, PurposeKind, Target};
use crate::shown::{Document, Page, PageVisitors};
use crate::target::{AlsoFn, ApprovalTarget, TargetError};

/// Two targets claimed the same purpose kind (a wiring mistake, found at start-up).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("two approval targets serve the purpose `{}`", .0.as_str())]
pub struct DuplicateKind(pub PurposeKind);

/// Every [`ApprovalTarget`] of the deployment, by the purpose kind it serves.
#[derive(Debug, Default, Clone)]
pub struct ApprovalRegistry {
    targets: BTreeMap<PurposeKind, Arc<dyn ApprovalTarget>>,
}

impl ApprovalRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a target; each kind has at most one.
    pub fn register(&mut self, target: Arc<dyn ApprovalTarget>) -> Result<(), DuplicateKind> {
        let kind = target.kind();
        if self.targets.contains_key(&kind) {
            return Err(DuplicateKind(kind));
        }
        self.targets.insert(kind, target);
        Ok(())
    }

    /// The kinds that can be approved, in a stable order.
    pub fn kinds(&self) -> impl Iterator<Item = &PurposeKind> + '_ {
        self.targets.keys()
    }

    pub fn serves(&self, kind: &PurposeKind) -> bool {
        self.targets.contains_key(kind)
    }

    fn route<'a>(
        &self,
        purpose: &'a Purpose,
    ) -> Result<(&Arc<dyn ApprovalTarget>, &'a str), TargetError> {
        let target = self
            .targets
            .get(&purpose.kind)
            .ok_or(TargetError::NotFound)?;
        let id = purpose
            .id
            .as_deref()
            .filter(|id| !id.is_empty())
            .ok_or(TargetError::NotFound)?;
        Ok((target, id))
    }

    /// The object `purpose` names, as its recipient must see it.
    pub async fn describe(&self, purpose: &Purpose) -> Result<Target, TargetError> {
        let (target, id) = self.route(purpose)?;
        target.describe(id).await
    }

    /// Who hears about assertions for the object `purpose` names.
    pub async fn audience(&self, purpose: &Purpose) -> Result<Option<Audience>, TargetError> {
        let (target, id) = self.route(purpose)?;
        target.audience(id).await
    }

    /// Applies a decision to the object `purpose` names (see [`ApprovalTarget::decide`]).
    pub async fn decide(
        &self,
        purpose: &Purpose,
        decision: Decision,
        by: &Approver,
        also: &AlsoFn<'_>,
    ) -> Result<String, TargetError> {
        let (target, id) = self.route(purpose)?;
        target.decide(id, decision, by, also).await
    }

    fn target(&self, kind: &PurposeKind) -> Result<&Arc<dyn ApprovalTarget>, TargetError> {
        self.targets.get(kind).ok_or(TargetError::NotFound)
    }

    /// Who decides on a hosted page of `kind` (`NotFound` for a kind nobody serves).
    pub fn page_visitors(&self, kind: &PurposeKind) -> Result<PageVisitors, TargetError> {
        Ok(self.target(kind)?.page_visitors())
    }

    /// What the hosted page of `kind` at `page_id` shows.
    pub async fn page(&self, kind: &PurposeKind, page_id: &str) -> Result<Page, TargetError> {
        if page_id.is_empty() {
            return Err(TargetError::NotFound);
        }
        self.target(kind)?.page(page_id).await
    }

    /// The document of the hosted page of `kind` at `page_id`.
    pub async fn document(
        &self,
        kind: &PurposeKind,
        page_id: &str,
    ) -> Result<Option<Document>, TargetError> {
        if page_id.is_empty() {
            return Err(TargetError::NotFound);
        }
        self.target(kind)?.document(page_id).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use idconsent_kernel::id::{ApplicationId, DeviceId, TypedId};
    use idconsent_kernel::{Environment, PhoneNumber};
    use serde_json::json;

    use super::*;
    use crate::model::Recipient;
    use idconsent_webhook::Effects;

    const MANDATE: PurposeKind = PurposeKind::declared("mandate");

    /// One pending object, `obj_1`, decided at most once.
    #[derive(Debug, Default)]
    struct OneObject {
        decided: Mutex<Option<(Decision, usize)>>,
    }

    fn audience() -> Audience {
        Audience {
            application_id: ApplicationId::from_trusted("app_1".into()),
            environment: Environment::Sandbox,
            callback_url: "https://shop.example/hooks".into(),
        }
    }

    #[async_trait]
    impl ApprovalTarget for OneObject {
        fn kind(&self) -> PurposeKind {
            MANDATE
        }
        async fn describe(&self, id: &str) -> Result<Target, TargetError> {
            if id != "obj_1" {
                return Err(TargetError::NotFound);
            }
            if self.decided.lock().unwrap().is_some() {
                return Err(TargetError::NotPending("decided".into()));
            }
            Ok(Target {
                canonical_id: id.to_owned(),
                recipient: Recipient::Phone(PhoneNumber::parse("+15551234567").unwrap()),
                context: json!({"type": "mandate"}),
                page: None,
                audience: Some(audience()),
                shown: crate::Shown {
                    title: "A mandate".into(),
                    requester: None,
                    lines: vec![],
                    notes: vec![],
                    words: crate::Words::approve_or_decline("mandate"),
                },
                passkey_required: true,
            })
        }
        async fn audience(&self, _: &str) -> Result<Option<Audience>, TargetError> {
            Ok(Some(audience()))
        }
        async fn decide(
            &self,
            id: &str,
            decision: Decision,
            _: &Approver,
            also: &AlsoFn<'_>,
        ) -> Result<String, TargetError> {
            self.describe(id).await?;
            let effects = also(&audience());
            *self.decided.lock().unwrap() = Some((decision, effects.outbox.len()));
            Ok("active".into())
        }
    }

    fn approver() -> Approver {
        Approver {
            via: crate::model::ApprovedVia::Device {
                device_id: DeviceId::from_trusted("dev_1".into()),
                phone: PhoneNumber::parse("+15551234567").unwrap(),
            },
            context_hash: None,
        }
    }

    #[tokio::test]
    async fn purposes_reach_the_target_of_their_kind_only() {
        let mut registry = ApprovalRegistry::new();
        let target = Arc::new(OneObject::default());
        registry.register(target.clone()).unwrap();
        assert_eq!(
            registry.register(Arc::new(OneObject::default())),
            Err(DuplicateKind(MANDATE))
        );
        assert_eq!(registry.kinds().collect::<Vec<_>>(), [&MANDATE]);

        let mandate = Purpose::new(MANDATE, "obj_1");
        assert_eq!(
            registry.describe(&mandate).await.unwrap().context["type"],
            "mandate"
        );
        // A kind nobody serves, a missing id and an unknown id are all "not found".
        let signature = Purpose::new(PurposeKind::declared("signature"), "obj_1");
        assert!(matches!(
            registry.describe(&signature).await,
            Err(TargetError::NotFound)
        ));
        let no_id = Purpose {
            kind: MANDATE,
            id: None,
        };
        assert!(matches!(
            registry.describe(&no_id).await,
            Err(TargetError::NotFound)
        ));
        let unknown = Purpose::new(MANDATE, "obj_2");
        assert!(matches!(
            registry.describe(&unknown).await,
            Err(TargetError::NotFound)
        ));

        let status = registry
            .decide(&mandate, Decision::Approve, &approver(), &|_| {
                Effects::default()
            })
            .await
            .unwrap();
        assert_eq!(status, "active");
        assert_eq!(
            *target.decided.lock().unwrap(),
            Some((Decision::Approve, 0))
        );
        assert!(matches!(
            registry
                .decide(&mandate, Decision::Reject, &approver(), &|_| {
                    Effects::default()
                })
                .await,
            Err(TargetError::NotPending(_))
        ));
    }

    #[test]
    fn named_purpose_kinds_are_checked_for_their_form() {
        assert_eq!(
            PurposeKind::named("device_add").unwrap(),
            PurposeKind::declared("device_add")
        );
        for name in ["", "Mandate", "mandate ", "a-b", "x".repeat(33).as_str()] {
            assert!(PurposeKind::named(name).is_err(), "{name:?}");
        }
    }
}
