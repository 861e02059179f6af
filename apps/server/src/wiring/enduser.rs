//! End users: enrollments, passkey devices, approvals in the app, app tokens.

use std::sync::Arc;

use idconsent_approval::ApprovalRegistry;
use idconsent_enduser::{DeviceAddApprovals, EndUserPorts, EndUserService, EndUserSettings};
use idconsent_hosted::{HostedApprovals, HostedPorts, HostedSettings};
use idconsent_jose::HmacAppTokens;
use idconsent_store_diesel::{DieselConfirmationStore, DieselDeliveryStore, DieselEndUserStore};
use idconsent_webauthn::WebauthnCeremony;

use super::{Shared, WiringError};

/// The relying party every passkey ceremony uses (the app's and the hosted pages').
pub fn passkeys(shared: &Shared) -> Result<Arc<WebauthnCeremony>, WiringError> {
    let config = &shared.config;
    Ok(Arc::new(WebauthnCeremony::from_origin_list(
        &config.passkeys.rp_id,
        &config.passkeys.rp_origins,
    )?))
}

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
            passkeys: passkeys(shared)?,
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

/// Hosted approval pages for email recipients: codes by email, passkeys made in the browser.
pub fn hosted(
    shared: &Shared,
    approvals: Arc<ApprovalRegistry>,
) -> Result<Arc<HostedApprovals>, WiringError> {
    Ok(Arc::new(HostedApprovals::new(
        HostedPorts {
            approvals,
            confirmations: Arc::new(DieselConfirmationStore::new(shared.db.clone())),
            passkeys: passkeys(shared)?,
            notifications: shared.notifier.clone(),
            hasher: shared.hasher.clone(),
            random: shared.random.clone(),
            clock: shared.clock.clone(),
        },
        HostedSettings::default(),
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
