//! Passive and active authentication of one chip on one core: the SOD's CMS signature, the
//! document signer's chain to its CSCA, the data group hashes, DG1/DG2 parsing and the
//! active-authentication answer (docs/performance.md, "eMRTD chip verification").
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use idconsent_emrtd::fixtures::{
    Chip, ChipSpec, Csca, HashAlgorithm, KeyAlgorithm, SigningKey, portrait_jpeg,
};
use idconsent_emrtd::{TrustStore, verify_blocking};
use idconsent_kernel::Timestamp;
use idconsent_verification::chip::{
    ActiveAuthentication, ChipCheck, ChipEvidence, PassiveAuthentication,
};

const CHALLENGE: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

/// A chip whose CSCA, document signer and AA key are of the given algorithms, and the check of
/// it (the trust store holds its CSCA).
fn chip(csca: KeyAlgorithm, signer: KeyAlgorithm, aa: KeyAlgorithm) -> (TrustStore, ChipCheck) {
    let at = Timestamp::parse_rfc3339("2026-11-27T10:00:00Z").unwrap();
    let year = Duration::from_secs(365 * 24 * 3600);
    let mut csca = Csca::new("UT", csca, at);
    let signer = csca.issue(signer, at.minus(year), at.plus(year));
    let mut trust = TrustStore::empty();
    trust.add_certificates(&csca.certificate).unwrap();
    let hash = match aa {
        KeyAlgorithm::Rsa(_) => HashAlgorithm::Sha1,
        _ => HashAlgorithm::Sha256,
    };
    let spec = ChipSpec {
        active_authentication: Some((SigningKey::rsa_slot(aa, 1), hash)),
        ..ChipSpec::specimen(portrait_jpeg())
    };
    let chip = Chip::build(&spec, &signer);
    let files = chip.files(Some((&CHALLENGE, chip.answer(&CHALLENGE))));
    let check = ChipCheck {
        evidence: ChipEvidence::new(files).unwrap(),
        issued_challenge: Some(CHALLENGE),
        at,
    };
    let report = verify_blocking(&trust, &check);
    assert_eq!(report.passive_authentication, PassiveAuthentication::Passed);
    assert_eq!(report.active_authentication, ActiveAuthentication::Passed);
    (trust, check)
}

fn verify(c: &mut Criterion) {
    use KeyAlgorithm::*;
    let cases = [
        (
            "rsa4096-csca_rsa2048-ds_rsa1024-aa",
            Rsa(4096),
            Rsa(2048),
            Rsa(1024),
        ),
        (
            "bp384-csca_bp256-ds_bp256-aa",
            BrainpoolP384r1,
            BrainpoolP256r1,
            BrainpoolP256r1,
        ),
        ("p384-csca_p256-ds_p256-aa", P384, P256, P256),
        (
            "rsapss3072-csca_p256-ds_rsa2048-aa",
            RsaPss(3072),
            P256,
            Rsa(2048),
        ),
    ];
    let mut group = c.benchmark_group("emrtd_verify");
    for (name, csca, signer, aa) in cases {
        let (trust, check) = chip(csca, signer, aa);
        group.bench_function(name, |b| b.iter(|| verify_blocking(&trust, &check)));
    }
    group.finish();
}

criterion_group!(benches, verify);
criterion_main!(benches);
