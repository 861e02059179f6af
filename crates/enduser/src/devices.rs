//! A user's devices: listing, blocking and removing them, and adding one to an enrolled phone
//! — approved by one of its active devices, or after a recovery's cooling-off period
//! (ADR 0013).

use crate::events::{
    DEVICE_ACTIVATED, DEVICE_DEREGISTERED, DEVICE_RECOVERY_STARTED, DEVICE_REGISTERED,
};
use idconsent_approval::Audience;
use idconsent_kernel::id::{DeviceId, EndUserId, TypedId};
use idconsent_notification::{Address, NewMessage};
use idconsent_webhook::{Effects, EventType, Outbox};
use serde::Serialize;

use crate::error::EndUserError;
use crate::events::{DeviceActivated, DeviceDeregistered, DeviceRecoveryStarted, DeviceRegistered};
use crate::model::{Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus};
use crate::ports::StoreError;
use crate::service::EndUserService;

/// How often a registration is judged again when another device of the same user was
/// registered meanwhile.
const REGISTER_ATTEMPTS: usize = 3;

/// The distinct applications that hear about `devices` (and `also`), once each.
pub(crate) fn audiences<'a>(
    devices: impl IntoIterator<Item = &'a Device>,
    also: Option<&'a Audience>,
) -> Vec<&'a Audience> {
    let mut audiences: Vec<&Audience> = Vec::new();
    for audience in devices
        .into_iter()
        .filter(|device| device.status != DeviceStatus::Deregistered)
        .filter_map(|device| device.audience.as_ref())
        .chain(also)
    {
        if !audiences.contains(&audience) {
            audiences.push(audience);
        }
    }
    audiences
}

impl EndUserService {
    pub async fn devices(&self, user: &EndUserId) -> Result<Vec<Device>, EndUserError> {
        Ok(self.ports.devices.of_user(user).await?)
    }

    /// One of the user's devices; anyone else's is "not found".
    pub async fn device(&self, user: &EndUserId, id: &str) -> Result<Device, EndUserError> {
        let id = DeviceId::parse(id).map_err(|_| DEVICE_NOT_FOUND)?;
        self.ports
            .devices
            .find(&id)
            .await?
            .filter(|device| &device.user_id == user)
            .ok_or(DEVICE_NOT_FOUND)
    }

    /// Blocks a device: it can no longer authenticate and its tokens stop working.
    pub async fn block_device(&self, user: &EndUserId, id: &str) -> Result<Device, EndUserError> {
        self.change_device(user, id, &[DeviceStatus::Active], DeviceStatus::Blocked)
            .await
    }

    /// Deregisters a device (event `device.deregistered`). A pending device removed this way
    /// is a rejected addition or a cancelled recovery.
    pub async fn deregister_device(
        &self,
        user: &EndUserId,
        id: &str,
    ) -> Result<Device, EndUserError> {
        self.change_device(
            user,
            id,
            &[
                DeviceStatus::Active,
                DeviceStatus::Blocked,
                DeviceStatus::Pending,
            ],
            DeviceStatus::Deregistered,
        )
        .await
    }

    async fn change_device(
        &self,
        user: &EndUserId,
        id: &str,
        from: &[DeviceStatus],
        to: DeviceStatus,
    ) -> Result<Device, EndUserError> {
        let device = self.device(user, id).await?;
        let now = self.now();
        let outbox = if to == DeviceStatus::Deregistered {
            let owner = self.user(&device.user_id).await?;
            self.event(
                device.audience.as_ref(),
                DEVICE_DEREGISTERED,
                DeviceDeregistered {
                    device_id: &device.id,
                    phone: owner.phone.as_str(),
                    name: &device.name,
                    platform: &device.platform,
                },
            )
        } else {
            Vec::new()
        };
        if !self
            .ports
            .devices
            .set_status(&device.id, from, to, now, &Effects::events(outbox.clone()))
            .await?
        {
            return Err(EndUserError::Conflict(format!(
                "The device is {}",
                device.status.as_str()
            )));
        }
        self.nudge(&outbox);
        Ok(Device {
            status: to,
            ..device
        })
    }

    /// Registers `device` for `enrollment`: active when it is the phone's first device, else
    /// pending (ADR 0013). Judged on the user's devices as they are in the transaction; a
    /// registration that raced another one of the same user is judged again.
    pub(crate) async fn register_device(
        &self,
        mut device: Device,
        enrollment: &Enrollment,
        user: &EndUser,
    ) -> Result<Device, EndUserError> {
        let now = self.now();
        for _ in 0..REGISTER_ATTEMPTS {
            let existing = self.ports.devices.of_user(&user.id).await?;
            device.status = Device::status_after(&existing);
            let data = DeviceRegistered {
                device_id: &device.id,
                enrollment_id: &enrollment.id,
                phone: enrollment.phone.as_str(),
                name: &device.name,
                platform: &device.platform,
                status: device.status.as_str(),
            };
            // A pending device concerns every application that enrolled one of the phone's
            // devices, not only the one enrolling now.
            let outbox = self.events_to(
                &audiences(&existing, enrollment.audience.as_ref()),
                DEVICE_REGISTERED,
                &data,
            );
            match self
                .ports
                .devices
                .register(&device, &enrollment.id, now, &outbox, existing.len())
                .await
            {
                Ok(()) => {
                    self.nudge(&outbox);
                    if device.status == DeviceStatus::Pending {
                        self.text(
                            enrollment,
                            format!(
                                "A new device \"{}\" asks to join your idconsent account. Approve \
                                 or reject it in the app on one of your devices. If this was not \
                                 you, reject it.",
                                device.name
                            ),
                        )
                        .await?;
                    }
                    return Ok(device);
                }
                Err(StoreError::Changed) => continue,
                Err(StoreError::NotFound) => {
                    return Err(EndUserError::Conflict(
                        "The enrollment already has a passkey".into(),
                    ));
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(StoreError::Changed.into())
    }

    /// `POST /v1/enrollments/:id/recovery`: the user of a pending device has no device left to
    /// approve it with. It becomes active after the cooling-off period unless one of the
    /// user's devices rejects it; every application that enrolled one of them is told, and the
    /// phone gets an SMS.
    ///
    /// Only the installation that made the enrollment (its `X-Device-ID`) may ask; for anyone
    /// else the enrollment does not exist.
    pub async fn start_recovery(
        &self,
        enrollment_id: &str,
        installation: &str,
    ) -> Result<Device, EndUserError> {
        let enrollment = self.enrollment(enrollment_id).await?;
        if enrollment.installation != installation.trim() {
            return Err(EndUserError::NotFound("Enrollment not found"));
        }
        let not_pending = || {
            EndUserError::Conflict("Only a device waiting for approval can start a recovery".into())
        };
        if enrollment.status != EnrollmentStatus::PasskeyRegistered {
            return Err(not_pending());
        }
        let device_id = enrollment.device_id.clone().ok_or_else(not_pending)?;
        let device = self
            .ports
            .devices
            .find(&device_id)
            .await?
            .filter(|device| device.status == DeviceStatus::Pending)
            .ok_or_else(not_pending)?;
        let now = self.now();
        let ends_at = now.plus(self.settings.recovery_cooling_off);
        let others = self.ports.devices.of_user(&device.user_id).await?;
        let outbox = self.events_to(
            &audiences(
                others.iter().filter(|other| other.id != device.id),
                enrollment.audience.as_ref(),
            ),
            DEVICE_RECOVERY_STARTED,
            &DeviceRecoveryStarted {
                device_id: &device.id,
                phone: enrollment.phone.as_str(),
                name: &device.name,
                platform: &device.platform,
                recovery_ends_at: ends_at,
            },
        );
        if !self
            .ports
            .devices
            .start_recovery(&device.id, ends_at, &outbox)
            .await?
        {
            return Err(EndUserError::Conflict(
                "A recovery is already under way for this device".into(),
            ));
        }
        self.nudge(&outbox);
        self.text(
            &enrollment,
            format!(
                "A recovery was started for your idconsent account: the new device \"{}\" will be \
                 able to approve requests on {}. If this was not you, open the app on one of your \
                 devices and reject it.",
                device.name,
                ends_at.to_rfc3339()
            ),
        )
        .await?;
        Ok(Device {
            recovery_ends_at: Some(ends_at),
            ..device
        })
    }

    /// Activates the pending devices whose recovery's cooling-off period is over; returns how
    /// many this call activated (several processes may run it: each device is activated once).
    pub async fn activate_due_recoveries(&self) -> Result<usize, EndUserError> {
        let now = self.now();
        let mut activated = 0;
        for device in self.ports.devices.due_recoveries(now, 100).await? {
            let user = self.user(&device.user_id).await?;
            let others = self.ports.devices.of_user(&device.user_id).await?;
            let outbox = self.events_to(
                &audiences(
                    others.iter().filter(|other| other.id != device.id),
                    device.audience.as_ref(),
                ),
                DEVICE_ACTIVATED,
                &DeviceActivated {
                    device_id: &device.id,
                    phone: user.phone.as_str(),
                    name: &device.name,
                    platform: &device.platform,
                    activated_by: "recovery",
                    approved_by: None,
                },
            );
            if self
                .ports
                .devices
                .set_status(
                    &device.id,
                    &[DeviceStatus::Pending],
                    DeviceStatus::Active,
                    now,
                    &Effects::events(outbox.clone()),
                )
                .await?
            {
                activated += 1;
                self.nudge(&outbox);
            }
        }
        Ok(activated)
    }

    /// One event for each audience.
    pub(crate) fn events_to(
        &self,
        audiences: &[&Audience],
        event_type: EventType,
        data: &impl Serialize,
    ) -> Vec<Outbox> {
        audiences
            .iter()
            .flat_map(|audience| self.event(Some(audience), event_type.clone(), data))
            .collect()
    }

    /// An SMS to the enrollment's phone.
    async fn text(&self, enrollment: &Enrollment, body: String) -> Result<(), EndUserError> {
        let to = Address::parse(enrollment.phone.as_str())
            .map_err(|_| EndUserError::Unavailable("phone is not an SMS address".into()))?;
        self.ports
            .notifications
            .send(NewMessage {
                to,
                subject: "idconsent account".into(),
                body,
                code: None,
                link: None,
            })
            .await
            .map_err(|error| EndUserError::Unavailable(Box::new(error)))?;
        Ok(())
    }
}

const DEVICE_NOT_FOUND: EndUserError = EndUserError::NotFound("Device not found");
