//! A new device of an enrolled phone as an object its user approves with one of the devices
//! they already have (purpose `device_add`, ADR 0013).

use crate::events::{DEVICE_ACTIVATED, DEVICE_DEREGISTERED};
use std::sync::Arc;

use async_trait::async_trait;
use idconsent_approval::{
    AlsoFn, ApprovalTarget, Approver, Audience, Decision, Line, PurposeKind, Recipient, Shown,
    Target, TargetError, Words,
};
use idconsent_kernel::id::{DeviceId, TypedId};
use idconsent_kernel::{Clock, IdGenerator};
use idconsent_webhook::{Effects, EventType, Outbox};

use crate::context::DeviceAddContext;
use crate::devices::audiences;
use crate::events::{DeviceActivated, DeviceDeregistered};
use crate::model::{Device, DeviceStatus, EndUser};
use crate::ports::{DeviceRepository, EnrollmentRepository, StoreError};

/// The [`ApprovalTarget`] of pending devices.
#[derive(Debug, Clone)]
pub struct DeviceAddApprovals {
    devices: Arc<dyn DeviceRepository>,
    users: Arc<dyn EnrollmentRepository>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

fn unavailable(error: StoreError) -> TargetError {
    TargetError::Unavailable(Box::new(error))
}

impl DeviceAddApprovals {
    /// The purpose kind this domain serves (`purpose.type`: `device_add`).
    pub const KIND: PurposeKind = PurposeKind::declared("device_add");

    pub fn new(
        devices: Arc<dyn DeviceRepository>,
        users: Arc<dyn EnrollmentRepository>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            devices,
            users,
            clock,
            ids,
        }
    }

    async fn device_and_user(&self, id: &str) -> Result<(Device, EndUser), TargetError> {
        let id = DeviceId::parse(id).map_err(|_| TargetError::NotFound)?;
        let device = self
            .devices
            .find(&id)
            .await
            .map_err(unavailable)?
            .ok_or(TargetError::NotFound)?;
        let user = self
            .users
            .user(&device.user_id)
            .await
            .map_err(unavailable)?
            .ok_or(TargetError::NotFound)?;
        Ok((device, user))
    }

    fn outbox(
        &self,
        audiences: &[&Audience],
        event_type: EventType,
        data: &impl serde::Serialize,
    ) -> Vec<Outbox> {
        let now = self.clock.now();
        audiences
            .iter()
            .map(|audience| {
                Outbox::new(
                    self.ids.as_ref(),
                    event_type.clone(),
                    audience.application_id.clone(),
                    audience.environment,
                    now,
                    data,
                    &[&audience.callback_url],
                )
            })
            .collect()
    }
}

/// What the user reads on a device they already have: which device asks to join.
fn shown(device: &Device) -> Shown {
    let mut lines = vec![
        Line::labelled("name", "New device", device.name.clone()),
        Line::labelled("platform", "Platform", device.platform.clone()),
        Line::labelled("requested-at", "Asked at", device.created_at.to_rfc3339()),
    ];
    if let Some(ends) = device.recovery_ends_at {
        lines.push(Line::labelled(
            "recovery-ends-at",
            "Recovery ends",
            ends.to_rfc3339(),
        ));
    }
    Shown {
        title: "A new device asks to join your phone's devices".into(),
        requester: None,
        lines,
        notes: vec![],
        words: Words::approve_or_decline("device"),
    }
}

#[async_trait]
impl ApprovalTarget for DeviceAddApprovals {
    fn kind(&self) -> PurposeKind {
        Self::KIND
    }

    async fn describe(&self, id: &str) -> Result<Target, TargetError> {
        let (device, user) = self.device_and_user(id).await?;
        if device.status != DeviceStatus::Pending {
            return Err(TargetError::NotPending(format!(
                "The device is {}",
                device.status.as_str()
            )));
        }
        let context = DeviceAddContext {
            kind: "device_add",
            device_id: &device.id,
            phone: user.phone.as_str(),
            name: &device.name,
            platform: &device.platform,
            requested_at: device.created_at,
            recovery_ends_at: device.recovery_ends_at,
        };
        Ok(Target {
            canonical_id: device.id.to_string(),
            recipient: Recipient::Phone(user.phone.clone()),
            context: serde_json::to_value(context)
                .map_err(|error| TargetError::Unavailable(Box::new(error)))?,
            page: None,
            audience: device.audience.clone(),
            shown: shown(&device),
            passkey_required: true,
        })
    }

    async fn audience(&self, id: &str) -> Result<Option<Audience>, TargetError> {
        Ok(self.device_and_user(id).await?.0.audience)
    }

    /// Approve: the device becomes active (`device.activated`); reject: it is deregistered
    /// (`device.deregistered`) — to every application that enrolled one of the user's devices.
    async fn decide(
        &self,
        id: &str,
        decision: Decision,
        by: &Approver,
        also: &AlsoFn<'_>,
    ) -> Result<String, TargetError> {
        let (device, user) = self.device_and_user(id).await?;
        // Only another of the user's devices decides (a pending one cannot assert anyway).
        let Some((approving_device, phone)) = by.device() else {
            return Err(TargetError::NotFound);
        };
        if *approving_device == device.id || *phone != user.phone {
            return Err(TargetError::NotFound);
        }
        let devices = self.devices.of_user(&user.id).await.map_err(unavailable)?;
        let told = audiences(&devices, None);
        let (to, mut effects) = match decision {
            Decision::Approve => (
                DeviceStatus::Active,
                Effects::events(self.outbox(
                    &told,
                    DEVICE_ACTIVATED,
                    &DeviceActivated {
                        device_id: &device.id,
                        phone: user.phone.as_str(),
                        name: &device.name,
                        platform: &device.platform,
                        activated_by: "device",
                        approved_by: Some(approving_device),
                    },
                )),
            ),
            Decision::Reject => (
                DeviceStatus::Deregistered,
                Effects::events(self.outbox(
                    &told,
                    DEVICE_DEREGISTERED,
                    &DeviceDeregistered {
                        device_id: &device.id,
                        phone: user.phone.as_str(),
                        name: &device.name,
                        platform: &device.platform,
                    },
                )),
            ),
        };
        if let Some(audience) = &device.audience {
            effects.extend(also(audience));
        }
        if !self
            .devices
            .set_status(
                &device.id,
                &[DeviceStatus::Pending],
                to,
                self.clock.now(),
                &effects,
            )
            .await
            .map_err(unavailable)?
        {
            return Err(TargetError::NotPending(
                "The device was decided meanwhile".into(),
            ));
        }
        Ok(to.as_str().to_owned())
    }
}
