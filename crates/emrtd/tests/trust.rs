//! The trust store from a directory (PEM, DER, master lists, CRLs) and the verifier behind its
//! port, on the blocking pool.

mod common;

use std::sync::Arc;

use common::{CHALLENGE, DAY, YEAR, answered, now, specimen, with_aa};
use idconsent_emrtd::fixtures::{
    Chip, Csca, HashAlgorithm, KeyAlgorithm, master_list, read_chip_dir,
};
use idconsent_emrtd::{EmrtdVerifier, TrustStore};
use idconsent_verification::chip::{
    ActiveAuthentication, ChipCheck, ChipEvidence, ChipVerifier, PassiveAuthentication,
    PassiveFailure,
};

struct Countries {
    /// The CSCA whose certificate the operator placed, and that issued the list's signer.
    home: Csca,
    /// CSCAs known only through master lists.
    listed: Csca,
    unlisted: Csca,
}

fn countries() -> Countries {
    let at = now();
    Countries {
        home: Csca::new("DE", KeyAlgorithm::BrainpoolP256r1, at),
        listed: Csca::new("FR", KeyAlgorithm::P256, at),
        unlisted: Csca::new("IT", KeyAlgorithm::P256, at),
    }
}

fn chip_of(csca: &mut Csca) -> Chip {
    let signer = csca.issue(KeyAlgorithm::P256, now().minus(DAY), now().plus(YEAR));
    Chip::build(&specimen(), &signer)
}

#[test]
fn a_directory_of_certificates_master_lists_and_crls_is_the_trust_store() {
    let mut c = countries();
    let at = now();
    let list_signer = c
        .home
        .issue(KeyAlgorithm::P256, at.minus(DAY), at.plus(YEAR));
    let broken_signer = c
        .home
        .issue(KeyAlgorithm::P256, at.minus(DAY), at.plus(YEAR));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("de.pem"), c.home.certificate_pem()).unwrap();
    std::fs::write(
        dir.path().join("good.ml"),
        master_list(&list_signer, &[&c.listed], false),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("broken.ml"),
        master_list(&broken_signer, &[&c.unlisted], true),
    )
    .unwrap();
    let revoked = c
        .listed
        .issue(KeyAlgorithm::P256, at.minus(DAY), at.plus(YEAR));
    std::fs::write(
        dir.path().join("fr.crl"),
        c.listed.crl(&[&revoked], at.minus(DAY), at.plus(DAY)),
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();

    let trust = TrustStore::load_dir(dir.path(), at).unwrap();
    assert_eq!(
        trust.anchor_count(),
        2,
        "DE from its file, FR from the good list"
    );
    assert_eq!(trust.crl_count(), 1);
    let rejected = trust.rejected();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(rejected[0].file.ends_with("broken.ml"));
    assert!(
        rejected[0].reason.contains("signature"),
        "{}",
        rejected[0].reason
    );

    let passed = |chip: Chip| common::verify(&trust, chip.files(None), None).passive_authentication;
    assert_eq!(passed(chip_of(&mut c.home)), PassiveAuthentication::Passed);
    assert_eq!(
        passed(chip_of(&mut c.listed)),
        PassiveAuthentication::Passed
    );
    // The broken list's CSCA is not trusted.
    assert_eq!(
        passed(chip_of(&mut c.unlisted)),
        PassiveAuthentication::Failed(PassiveFailure::UntrustedDocumentSigner)
    );
    assert_eq!(
        passed(Chip::build(&specimen(), &revoked)),
        PassiveAuthentication::Failed(PassiveFailure::Revoked)
    );
}

#[test]
fn a_master_list_whose_signer_no_trusted_csca_issued_adds_nothing() {
    let mut c = countries();
    let at = now();
    // Signed correctly, by a signer of a CSCA the operator did not place.
    let signer = c
        .unlisted
        .issue(KeyAlgorithm::P256, at.minus(DAY), at.plus(YEAR));
    let mut trust = TrustStore::empty();
    trust.add_certificates(&c.home.certificate).unwrap();
    let error = trust
        .add_master_list(&master_list(&signer, &[&c.listed], false), at)
        .unwrap_err();
    assert!(
        error.to_string().contains("not issued by a trusted CSCA"),
        "{error}"
    );
    assert_eq!(trust.anchor_count(), 1);
    // A list cannot vouch for the CSCA that signs it either.
    let error = trust
        .add_master_list(&master_list(&signer, &[&c.unlisted], false), at)
        .unwrap_err();
    assert!(error.to_string().contains("not issued by a trusted CSCA"));
}

#[test]
fn certificate_files_must_be_ca_certificates() {
    let mut c = countries();
    let signer = c.home.issue(KeyAlgorithm::P256, now(), now().plus(YEAR));
    let mut trust = TrustStore::empty();
    assert!(trust.add_certificates(&signer.certificate).is_err());
    assert!(trust.add_certificates(b"not a certificate").is_err());
    assert_eq!(trust.anchor_count(), 0);
    // DER and PEM both load.
    assert_eq!(trust.add_certificates(&c.home.certificate).unwrap(), 1);
    assert_eq!(
        trust
            .add_certificates(c.listed.certificate_pem().as_bytes())
            .unwrap(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_port_verifies_twenty_chips_at_once_on_the_blocking_pool() {
    let world = common::World::ec();
    let chip = world.chip(&with_aa(KeyAlgorithm::P256, HashAlgorithm::Sha256));
    // The chip as a wallet reads it from disk.
    let dir = tempfile::tempdir().unwrap();
    chip.write_to_dir(dir.path()).unwrap();
    let mut files = read_chip_dir(dir.path()).unwrap();
    assert_eq!(files.dg15, chip.dg15);
    assert!(files.dg11.is_none());
    files.active_authentication = answered(&chip).active_authentication;

    let verifier: Arc<dyn ChipVerifier> = Arc::new(EmrtdVerifier::new(world.trust.clone(), 2));
    let evidence = ChipEvidence::new(files).unwrap();
    let runs = (0..20).map(|_| {
        let verifier = Arc::clone(&verifier);
        let check = ChipCheck {
            evidence: evidence.clone(),
            issued_challenge: Some(CHALLENGE),
            at: now(),
        };
        tokio::spawn(async move { verifier.verify(check).await })
    });
    for run in runs {
        let report = run.await.unwrap().unwrap();
        assert_eq!(report.passive_authentication, PassiveAuthentication::Passed);
        assert_eq!(report.active_authentication, ActiveAuthentication::Passed);
    }
}
