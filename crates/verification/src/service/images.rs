//! The life of a person's identity images: stored before the job (a job is never stored
//! without them), taken back when the submission is refused after all, deleted by the worker
//! whose result is stored, and swept when a crash or a failed delete left them behind
//! (docs/security.md, "Identity images").

use std::collections::BTreeSet;

use idconsent_kernel::id::{TypedId, VerificationId};
use idconsent_kernel::{CalendarDate, Environment, Timestamp};
use idconsent_webhook::Effects;

use super::{VerificationService, unavailable};
use crate::error::VerificationError;
use crate::model::{Images, Verification};
use crate::ports::{DailyCap, StoreError};

/// Where the images live in the blob store: `identity/<verificationId>/<front|back|selfie>`.
pub const IMAGES_PREFIX: &str = "identity/";

/// Keys the sweep looks at per listing (and per store lookup).
const SWEEP_PAGE: usize = 200;

impl VerificationService {
    /// The images under their keys, then the job, charged in the same transaction. When
    /// anything fails after the first upload — an upload, the charge, the quota, the database
    /// — every image is deleted before the error is returned: a refused verification keeps no
    /// one's face. (A request cut off mid-way leaves them to [`Self::sweep_orphaned_images`].)
    pub(super) async fn store_with_images(
        &self,
        verification: &Verification,
        uploads: Vec<(String, Vec<u8>)>,
    ) -> Result<(), VerificationError> {
        let started = self.now();
        for (key, bytes) in uploads {
            if let Err(error) = self.ports.blobs.put(&key, bytes).await {
                self.take_back(&verification.images).await;
                return Err(unavailable(error));
            }
        }
        // The sweep deletes images older than the analysis lease that no processing verification
        // names: a job must be stored well within the lease of its first upload. Half of it for
        // the uploads leaves the insert the other half, more than the database's statement timeout.
        if self.now().since(started) > self.settings.analysis_lease / 2 {
            self.take_back(&verification.images).await;
            return Err(VerificationError::Unavailable(
                "storing the images took longer than half the analysis lease".into(),
            ));
        }
        match self.insert(verification).await {
            Ok(()) => Ok(()),
            // Another verification holds this id, and its row names these keys: they are its.
            Err(error @ StoreError::Duplicate) => Err(self.store_error(error)),
            Err(error) => {
                self.take_back(&verification.images).await;
                Err(self.store_error(error))
            }
        }
    }

    async fn insert(&self, verification: &Verification) -> Result<(), StoreError> {
        let charge = self
            .ports
            .metering
            .charge(
                &verification.application_id,
                verification.environment,
                idconsent_kernel::Metric::Verifications,
                verification.created_at,
            )
            .await
            .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
        let effects = Effects {
            outbox: Vec::new(),
            charges: charge.into_iter().collect(),
        };
        // Sandbox traffic is never charged, so it is capped per day instead; the count is taken
        // in the insert's transaction.
        let cap = (verification.environment == Environment::Sandbox).then(|| DailyCap {
            day: CalendarDate::of(verification.created_at),
            limit: self.settings.sandbox_daily_cap,
        });
        self.ports.store.create(verification, &effects, cap).await
    }

    /// Deletes a refused submission's images. Best effort: what a failed delete leaves, the
    /// sweep deletes once it is older than the lease.
    async fn take_back(&self, images: &Images) {
        for key in images.keys() {
            let _ = self.ports.blobs.delete(&key).await;
        }
    }

    /// A finished verification's images are deleted: the result keeps what was read, and an
    /// identity document kept longer than needed is a liability (data minimisation). Only the
    /// worker whose result was stored deletes, so a retried analysis still finds them. Best
    /// effort: a failed delete leaves them to the sweep, never a wrong result.
    pub(super) async fn forget_images(&self, job: &Verification) {
        for key in job.images.keys() {
            let _ = self.ports.blobs.delete(&key).await;
        }
    }

    /// Deletes every image under `identity/` stored longer ago than the analysis lease that no
    /// processing verification names: what a crash between upload and insert, a request cut
    /// off, or a failed delete left behind. Returns how many it deleted.
    ///
    /// Safe with several processes (deleting twice is fine) and with submissions in flight: a
    /// job is stored within half the lease of its first upload or refused, so an image older
    /// than the lease whose verification is not processing never gets a row that needs it.
    pub async fn sweep_orphaned_images(&self) -> Result<usize, VerificationError> {
        let stored_before: Timestamp = self.now().minus(self.settings.analysis_lease);
        let mut after: Option<String> = None;
        let mut deleted = 0;
        loop {
            let page = self
                .ports
                .blobs
                .list_stored_before(IMAGES_PREFIX, stored_before, after.as_deref(), SWEEP_PAGE)
                .await
                .map_err(unavailable)?;
            let ids: BTreeSet<VerificationId> = page
                .iter()
                .filter_map(|blob| verification_of(&blob.key))
                .collect();
            let ids: Vec<VerificationId> = ids.into_iter().collect();
            let in_use = self.ports.store.images_in_use(&ids).await?;
            for blob in &page {
                if !in_use.contains(&blob.key) {
                    self.ports
                        .blobs
                        .delete(&blob.key)
                        .await
                        .map_err(unavailable)?;
                    deleted += 1;
                }
            }
            match page.last() {
                Some(last) if page.len() == SWEEP_PAGE => after = Some(last.key.clone()),
                _ => return Ok(deleted),
            }
        }
    }
}

/// The verification an image key belongs to (`identity/<id>/…`), if it names one.
fn verification_of(key: &str) -> Option<VerificationId> {
    let (id, _) = key.strip_prefix(IMAGES_PREFIX)?.split_once('/')?;
    VerificationId::parse(id).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_verification() {
        let id = "idv_01KBZZZZZZZZZZZZZZZZZZZZZZ";
        assert_eq!(
            verification_of(&format!("identity/{id}/selfie")).map(|id| id.to_string()),
            Some(id.to_owned())
        );
        for other in [
            "identity/stray",
            "merchants/idv_01/x",
            "identity/cs_01/front",
        ] {
            assert!(verification_of(other).is_none(), "{other}");
        }
    }
}
