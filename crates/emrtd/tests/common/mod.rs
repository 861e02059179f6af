//! The scenario the tests share: a CSCA, a document signer it issued, the trust store that
//! trusts the CSCA, and chips they make.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use idconsent_emrtd::fixtures::{
    Chip, ChipSpec, Csca, HashAlgorithm, KeyAlgorithm, Signer, SigningKey, portrait_jpeg,
};
use idconsent_emrtd::{TrustStore, verify_blocking};
use idconsent_kernel::Timestamp;
use idconsent_verification::chip::{ChipCheck, ChipEvidence, ChipFiles, ChipReport};

pub const DAY: Duration = Duration::from_secs(24 * 3600);
pub const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// The time every check runs at.
pub fn now() -> Timestamp {
    Timestamp::parse_rfc3339("2026-11-27T10:00:00Z").unwrap()
}

pub const CHALLENGE: [u8; 8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88];

pub struct World {
    pub csca: Csca,
    pub signer: Signer,
    pub trust: TrustStore,
}

impl World {
    pub fn new(csca: KeyAlgorithm, signer: KeyAlgorithm) -> Self {
        let at = now();
        let mut csca = Csca::new("UT", csca, at);
        let signer = csca.issue(signer, at.minus(30 * DAY), at.plus(10 * YEAR));
        let mut trust = TrustStore::empty();
        trust.add_certificates(&csca.certificate).unwrap();
        Self {
            csca,
            signer,
            trust,
        }
    }

    /// P-256 CSCA and document signer, the quick default.
    pub fn ec() -> Self {
        Self::new(KeyAlgorithm::P256, KeyAlgorithm::P256)
    }

    pub fn chip(&self, spec: &ChipSpec) -> Chip {
        Chip::build(spec, &self.signer)
    }

    pub fn verify(&self, files: ChipFiles, issued: Option<[u8; 8]>) -> ChipReport {
        verify(&self.trust, files, issued)
    }
}

pub fn verify(trust: &TrustStore, files: ChipFiles, issued: Option<[u8; 8]>) -> ChipReport {
    let check = ChipCheck {
        evidence: ChipEvidence::new(files).unwrap(),
        issued_challenge: issued,
        at: now(),
    };
    verify_blocking(trust, &check)
}

/// The specimen passport with a portrait and no AA.
pub fn specimen() -> ChipSpec {
    ChipSpec::specimen(portrait_jpeg())
}

/// The specimen with an AA key of `algorithm` answering with `hash`.
pub fn with_aa(algorithm: KeyAlgorithm, hash: HashAlgorithm) -> ChipSpec {
    ChipSpec {
        active_authentication: Some((SigningKey::generate(algorithm), hash)),
        ..specimen()
    }
}

/// The chip's files with its answer to `CHALLENGE`.
pub fn answered(chip: &Chip) -> ChipFiles {
    chip.files(Some((&CHALLENGE, chip.answer(&CHALLENGE))))
}
