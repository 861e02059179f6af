//! End users: enrollments, passkey devices, approvals in the app, app tokens.

use std::sync::Arc;

use idconsent_approval::ApprovalRegistry;
use idconsent_enduser::{DeviceAddApprovals, EndUserPorts, EndUserService, EndUserSettings};
use idconsent_jose::HmacAppTokens;
use idconsent_store_diesel::{DieselDeliveryStore, DieselEndUserStore};
use idconsent_webauthn::WebauthnCeremony;

use super::{Shared, WiringError};

pub fn build(
    shared: &Shared,
    approvals: Arc<ApprovalRegistry>,
) -> Result<Arc<EndUserService>, WiringError> {
    let config = &shared.config;
    let store = Arc::new(DieselEndUserStore::new(shared.db.clone()));
    Ok(Arc::new(EndUserService::new(
        EndUserPorts {
            enrollments: store.clone(),
            devices: store.clone(),
            challenges: store.clone(),
            refresh_tokens: store,
            passkeys: Arc::new(WebauthnCeremony::from_origin_list(
                &config.passkeys.rp_id,
                &config.passkeys.rp_origins,
            )?),
            access_tokens: Arc::new(HmacAppTokens::new(
                &shared.master.derive("app-access/hs256"),
            )?),
            approvals,
            metering: shared.metering.clone(),
            notifications: shared.notifier.clone(),
            events: Arc::new(DieselDeliveryStore::new(shared.db.clone())),
            hasher: shared.hasher.clone(),
            clock: shared.clock.clone(),
            ids: shared.ids.clone(),
            random: shared.random.clone(),
            outbox_written: Some(shared.outbox_written()),
        },
        EndUserSettings {
            recovery_cooling_off: config.passkeys.recovery_cooling_off,
            ..EndUserSettings::default()
        },
    )))
}

/// New devices of enrolled phones, approved with one of the user's devices (ADR 0013).
pub fn device_additions(shared: &Shared) -> DeviceAddApprovals {
    let store = Arc::new(DieselEndUserStore::new(shared.db.clone()));
    DeviceAddApprovals::new(
        store.clone(),
        store,
        shared.clock.clone(),
        shared.ids.clone(),
    )
}
