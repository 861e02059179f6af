//! An in-memory end-user store — enrollments, users, devices, challenges, refresh tokens — for
//! service tests (issue 13 §7). It passes the same contract suite as the diesel adapter: one
//! lock around all of it makes every operation as atomic as the contract asks, and outbox
//! entries go to an [`InMemoryDeliveries`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use idconsent_kernel::id::{ChallengeId, DeviceId, EndUserId, EnrollmentId, RefreshFamilyId};
use idconsent_kernel::{PhoneNumber, Timestamp, UsageLedger};
use idconsent_webhook::testing::InMemoryDeliveries;
use idconsent_webhook::{Effects, Outbox};

use crate::model::{
    Challenge, Device, DeviceStatus, EndUser, Enrollment, EnrollmentStatus, RefreshToken,
};
use crate::ports::{
    Admitted, AssertionInputs, ChallengeRepository, DeviceRepository, EnrollmentRepository,
    NextToken, RefreshTokenRepository, Rotation, Spent, StoreError,
};

#[derive(Debug, Default)]
struct State {
    enrollments: BTreeMap<EnrollmentId, Enrollment>,
    users: BTreeMap<EndUserId, EndUser>,
    devices: BTreeMap<DeviceId, Device>,
    challenges: BTreeMap<ChallengeId, Challenge>,
    /// By keyed hash.
    refresh_tokens: BTreeMap<String, RefreshToken>,
    usage: UsageLedger,
}

impl State {
    /// `record_use`'s rule: an active device whose counter advances (or stays 0 on both sides).
    fn record_use(&mut self, id: &DeviceId, counter: u32, at: Timestamp) -> bool {
        match self.devices.get_mut(id) {
            Some(device)
                if device.status == DeviceStatus::Active
                    && (device.counter < counter || (counter == 0 && device.counter == 0)) =>
            {
                device.counter = counter;
                device.last_used_at = Some(at);
                true
            }
            _ => false,
        }
    }

    fn challenge_usable(&self, id: &ChallengeId, at: Timestamp) -> bool {
        self.challenges
            .get(id)
            .is_some_and(|c| c.used_at.is_none() && c.expires_at > at)
    }
}

/// Every end-user port in memory; clone the `Arc` into each port of a service.
#[derive(Debug)]
pub struct InMemoryEndUsers {
    state: Mutex<State>,
    deliveries: Arc<InMemoryDeliveries>,
}

impl InMemoryEndUsers {
    /// A store whose events land in `deliveries`.
    pub fn new(deliveries: Arc<InMemoryDeliveries>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            deliveries,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl EnrollmentRepository for InMemoryEndUsers {
    async fn insert(&self, enrollment: &Enrollment) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.enrollments.contains_key(&enrollment.id) {
            return Err(StoreError::Duplicate);
        }
        state
            .enrollments
            .insert(enrollment.id.clone(), enrollment.clone());
        Ok(())
    }

    async fn insert_within(
        &self,
        enrollment: &Enrollment,
        max: u32,
        window: Duration,
    ) -> Result<Admitted, StoreError> {
        let mut state = self.lock();
        let since = enrollment.created_at.minus(window);
        let oldest_recent = state
            .enrollments
            .values()
            .filter(|e| e.phone == enrollment.phone && e.created_at > since)
            .map(|e| e.created_at);
        let recent: Vec<Timestamp> = oldest_recent.collect();
        if recent.len() >= max as usize {
            let oldest = recent
                .iter()
                .min()
                .copied()
                .unwrap_or(enrollment.created_at);
            return Ok(Admitted::Refused {
                retry_at: oldest.plus(window),
            });
        }
        state
            .enrollments
            .insert(enrollment.id.clone(), enrollment.clone());
        Ok(Admitted::Inserted)
    }

    async fn find(&self, id: &EnrollmentId) -> Result<Option<Enrollment>, StoreError> {
        Ok(self.lock().enrollments.get(id).cloned())
    }

    async fn take_otp_attempt(
        &self,
        id: &EnrollmentId,
        at: Timestamp,
    ) -> Result<Option<Enrollment>, StoreError> {
        let mut state = self.lock();
        Ok(state
            .enrollments
            .get_mut(id)
            .filter(|e| e.status == EnrollmentStatus::PendingOtp && e.otp_attempts_left > 0)
            .map(|enrollment| {
                enrollment.otp_attempts_left -= 1;
                enrollment.updated_at = at;
                enrollment.clone()
            }))
    }

    async fn fail(&self, id: &EnrollmentId, at: Timestamp) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.enrollments.get_mut(id) {
            Some(enrollment) if enrollment.status == EnrollmentStatus::PendingOtp => {
                enrollment.status = EnrollmentStatus::Failed;
                enrollment.updated_at = at;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn ensure_user(&self, candidate: &EndUser) -> Result<EndUser, StoreError> {
        let mut state = self.lock();
        if let Some(existing) = state.users.values().find(|u| u.phone == candidate.phone) {
            return Ok(existing.clone());
        }
        state.users.insert(candidate.id.clone(), candidate.clone());
        Ok(candidate.clone())
    }

    async fn user_by_phone(&self, phone: &PhoneNumber) -> Result<Option<EndUser>, StoreError> {
        Ok(self
            .lock()
            .users
            .values()
            .find(|u| u.phone == *phone)
            .cloned())
    }

    async fn user(&self, id: &EndUserId) -> Result<Option<EndUser>, StoreError> {
        Ok(self.lock().users.get(id).cloned())
    }

    async fn complete(
        &self,
        id: &EnrollmentId,
        user: &EndUserId,
        at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.enrollments.get_mut(id) {
            Some(enrollment) if enrollment.status == EnrollmentStatus::PasskeyRegistered => {
                enrollment.status = EnrollmentStatus::Completed;
                enrollment.updated_at = at;
            }
            _ => return Ok(false),
        }
        if let Some(user) = state.users.get_mut(user)
            && user.enrolled_at.is_none()
        {
            user.enrolled_at = Some(at);
        }
        self.deliveries.enqueue_now(outbox);
        Ok(true)
    }
}

#[async_trait]
impl DeviceRepository for InMemoryEndUsers {
    async fn register(
        &self,
        device: &Device,
        enrollment: &EnrollmentId,
        at: Timestamp,
        outbox: &[Outbox],
        existing_devices: usize,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        let existing = state
            .devices
            .values()
            .filter(|d| d.user_id == device.user_id)
            .count();
        if existing != existing_devices {
            return Err(StoreError::Changed);
        }
        let registrable = state
            .enrollments
            .get(enrollment)
            .is_some_and(|e| e.status == EnrollmentStatus::PendingOtp);
        if !registrable {
            return Err(StoreError::NotFound);
        }
        if state
            .devices
            .values()
            .any(|d| d.credential_id == device.credential_id)
        {
            return Err(StoreError::Duplicate);
        }
        if let Some(enrollment) = state.enrollments.get_mut(enrollment) {
            enrollment.status = EnrollmentStatus::PasskeyRegistered;
            enrollment.device_id = Some(device.id.clone());
            enrollment.updated_at = at;
        }
        state.devices.insert(device.id.clone(), device.clone());
        self.deliveries.enqueue_now(outbox);
        Ok(())
    }

    async fn start_recovery(
        &self,
        id: &DeviceId,
        ends_at: Timestamp,
        outbox: &[Outbox],
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.devices.get_mut(id) {
            Some(device)
                if device.status == DeviceStatus::Pending && device.recovery_ends_at.is_none() =>
            {
                device.recovery_ends_at = Some(ends_at);
                self.deliveries.enqueue_now(outbox);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn due_recoveries(&self, now: Timestamp, limit: u32) -> Result<Vec<Device>, StoreError> {
        let mut due: Vec<Device> = self
            .lock()
            .devices
            .values()
            .filter(|d| {
                d.status == DeviceStatus::Pending && d.recovery_ends_at.is_some_and(|at| at <= now)
            })
            .cloned()
            .collect();
        due.sort_by_key(|d| d.recovery_ends_at);
        due.truncate(limit as usize);
        Ok(due)
    }

    async fn find(&self, id: &DeviceId) -> Result<Option<Device>, StoreError> {
        Ok(self.lock().devices.get(id).cloned())
    }

    async fn of_user(&self, user: &EndUserId) -> Result<Vec<Device>, StoreError> {
        let mut devices: Vec<Device> = self
            .lock()
            .devices
            .values()
            .filter(|d| d.user_id == *user)
            .cloned()
            .collect();
        devices.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(devices)
    }

    async fn by_credential(&self, credential_id: &str) -> Result<Option<Device>, StoreError> {
        Ok(self
            .lock()
            .devices
            .values()
            .find(|d| d.credential_id == credential_id)
            .cloned())
    }

    async fn record_use(
        &self,
        id: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(self.lock().record_use(id, counter, at))
    }

    async fn set_status(
        &self,
        id: &DeviceId,
        from: &[DeviceStatus],
        to: DeviceStatus,
        at: Timestamp,
        effects: &Effects,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if !state
            .devices
            .get(id)
            .is_some_and(|device| from.contains(&device.status))
        {
            return Ok(false);
        }
        // Charges first: over a quota nothing is written, as in a store's transaction.
        state
            .usage
            .charge(&effects.charges)
            .map_err(|quota| StoreError::Unavailable(Box::new(quota)))?;
        if let Some(device) = state.devices.get_mut(id) {
            device.status = to;
        }
        for token in state.refresh_tokens.values_mut() {
            if token.device_id == *id && token.revoked_at.is_none() {
                token.revoked_at = Some(at);
            }
        }
        self.deliveries.enqueue_now(&effects.outbox);
        Ok(true)
    }
}

#[async_trait]
impl ChallengeRepository for InMemoryEndUsers {
    async fn insert(&self, challenge: &Challenge) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.challenges.contains_key(&challenge.id) {
            return Err(StoreError::Duplicate);
        }
        state
            .challenges
            .insert(challenge.id.clone(), challenge.clone());
        Ok(())
    }

    async fn find(&self, id: &ChallengeId) -> Result<Option<Challenge>, StoreError> {
        Ok(self.lock().challenges.get(id).cloned())
    }

    async fn consume(&self, id: &ChallengeId, at: Timestamp) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if !state.challenge_usable(id, at) {
            return Ok(false);
        }
        if let Some(challenge) = state.challenges.get_mut(id) {
            challenge.used_at = Some(at);
        }
        Ok(true)
    }

    async fn forget_expired(&self, before: Timestamp) -> Result<usize, StoreError> {
        let mut state = self.lock();
        let count = state.challenges.len();
        state.challenges.retain(|_, c| c.expires_at >= before);
        Ok(count - state.challenges.len())
    }

    async fn read_assertion(
        &self,
        challenge: &ChallengeId,
        credential_id: Option<&str>,
    ) -> Result<AssertionInputs, StoreError> {
        let state = self.lock();
        let device = credential_id.and_then(|credential_id| {
            state
                .devices
                .values()
                .find(|d| d.credential_id == credential_id)
                .cloned()
        });
        let user = device
            .as_ref()
            .and_then(|device| state.users.get(&device.user_id).cloned());
        Ok(AssertionInputs {
            challenge: state.challenges.get(challenge).cloned(),
            device,
            user,
        })
    }

    async fn spend_assertion(
        &self,
        challenge: &ChallengeId,
        device: &DeviceId,
        counter: u32,
        at: Timestamp,
    ) -> Result<Spent, StoreError> {
        let mut state = self.lock();
        if !state.challenge_usable(challenge, at) {
            return Ok(Spent::ChallengeUnusable);
        }
        if !state.record_use(device, counter, at) {
            return Ok(Spent::DeviceRefused);
        }
        if let Some(challenge) = state.challenges.get_mut(challenge) {
            challenge.used_at = Some(at);
        }
        Ok(Spent::Spent)
    }
}

#[async_trait]
impl RefreshTokenRepository for InMemoryEndUsers {
    async fn insert(&self, token: &RefreshToken) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.refresh_tokens.contains_key(&token.hash) {
            return Err(StoreError::Duplicate);
        }
        state
            .refresh_tokens
            .insert(token.hash.clone(), token.clone());
        Ok(())
    }

    async fn rotate(
        &self,
        presented_hash: &str,
        next: &NextToken,
        at: Timestamp,
    ) -> Result<Rotation, StoreError> {
        let mut state = self.lock();
        let Some(stored) = state.refresh_tokens.get(presented_hash).cloned() else {
            return Ok(Rotation::Invalid);
        };
        let live = stored.used_at.is_none()
            && stored.revoked_at.is_none()
            && stored.expires_at > at
            && stored.installation == next.installation;
        if live {
            if let Some(presented) = state.refresh_tokens.get_mut(presented_hash) {
                presented.used_at = Some(at);
            }
            let successor = RefreshToken {
                hash: next.hash.clone(),
                family: stored.family.clone(),
                user_id: stored.user_id.clone(),
                device_id: stored.device_id.clone(),
                installation: stored.installation.clone(),
                expires_at: next.expires_at,
                used_at: None,
                revoked_at: None,
                created_at: at,
            };
            state
                .refresh_tokens
                .insert(successor.hash.clone(), successor.clone());
            return Ok(Rotation::Rotated(successor));
        }
        if stored.used_at.is_some() {
            for token in state.refresh_tokens.values_mut() {
                if token.family == stored.family && token.revoked_at.is_none() {
                    token.revoked_at = Some(at);
                }
            }
            return Ok(Rotation::Reused(stored.family));
        }
        Ok(Rotation::Invalid)
    }

    async fn family_revoked(&self, family: &RefreshFamilyId) -> Result<bool, StoreError> {
        Ok(self
            .lock()
            .refresh_tokens
            .values()
            .any(|t| t.family == *family && t.revoked_at.is_some()))
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemoryEndUsers;
    use crate::contract::Stores;

    async fn stores() -> Option<(Stores, ())> {
        let deliveries = Arc::new(InMemoryDeliveries::default());
        let store = Arc::new(InMemoryEndUsers::new(deliveries.clone()));
        Some((
            Stores {
                enrollments: store.clone(),
                devices: store.clone(),
                challenges: store.clone(),
                refresh_tokens: store,
                deliveries,
            },
            (),
        ))
    }

    crate::enduser_store_contract!(stores);
}
