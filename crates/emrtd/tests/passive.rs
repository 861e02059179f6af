//! Passive authentication: the SOD's signature, the chain to a trusted CSCA, validity,
//! revocation and the data group hashes — with generated CSCAs, signers and chips.

mod common;

use common::{DAY, World, YEAR, now, specimen};
use idconsent_emrtd::TrustStore;
use idconsent_emrtd::fixtures::{
    Chip, ChipSpec, Csca, Dg11Spec, HashAlgorithm, KeyAlgorithm, SigningKey, portrait_jpeg, sod,
};
use idconsent_verification::chip::{
    CertificateRole, ChipAuthentication, DataGroup, PassiveAuthentication, PassiveFailure,
    PortraitFormat, Revocation,
};
use idconsent_verification::mrz::MrzFormat;

fn failure(report: &idconsent_verification::chip::ChipReport) -> PassiveFailure {
    match &report.passive_authentication {
        PassiveAuthentication::Failed(failure) => failure.clone(),
        PassiveAuthentication::Passed => panic!("passive authentication passed"),
    }
}

#[test]
fn a_valid_chip_passes_and_its_data_is_read_from_dg1_and_dg2() {
    let world = World::ec();
    let spec = ChipSpec {
        dg11: Some(Dg11Spec {
            full_name: "ERIKSSON<<ANNA<MARIA".into(),
            place_of_birth: "ZENITH<UTOPIA".into(),
            address: vec!["1 MAIN STREET".into(), "ZENITH".into()],
        }),
        chip_authentication: true,
        ..specimen()
    };
    let chip = world.chip(&spec);
    let report = world.verify(chip.files(None), None);

    assert_eq!(report.passive_authentication, PassiveAuthentication::Passed);
    assert_eq!(
        report.data_groups_verified,
        [
            DataGroup::Dg1,
            DataGroup::Dg2,
            DataGroup::Dg11,
            DataGroup::Dg14
        ]
    );
    let mrz = report.authentic_mrz().expect("DG1 read");
    assert_eq!(mrz.format, MrzFormat::Td3);
    assert_eq!(mrz.surname, "ERIKSSON");
    assert_eq!(mrz.given_names, "ANNA MARIA");
    assert_eq!(mrz.document_number, "L898902C3");
    assert_eq!(mrz.birth_date.to_string(), "1974-08-12");
    assert_eq!(mrz.expiry_date.to_string(), "2032-04-15");
    assert_eq!(mrz.nationality, "UTO");
    let portrait = report.authentic_portrait().expect("DG2 read");
    assert_eq!(portrait.format, PortraitFormat::Jpeg);
    assert_eq!(portrait.image, portrait_jpeg());
    assert_eq!((portrait.width, portrait.height), (240, 320));
    let details = report.authentic_personal_details().expect("DG11 read");
    assert_eq!(
        details.full_name,
        Some(("ERIKSSON".to_owned(), "ANNA MARIA".to_owned()))
    );
    assert_eq!(details.place_of_birth.as_deref(), Some("ZENITH UTOPIA"));
    assert_eq!(
        details.address,
        Some(vec!["1 MAIN STREET".to_owned(), "ZENITH".to_owned()])
    );
    // DG14 offers chip authentication; reading it is not running it.
    assert_eq!(report.chip_authentication, ChipAuthentication::NotVerified);
    let signer = report.document_signer.expect("document signer");
    assert_eq!(signer.serial_number, "02");
    assert!(
        signer.subject.contains("Document Signer 2"),
        "{}",
        signer.subject
    );
    assert!(signer.issuer.contains("CSCA UT"), "{}", signer.issuer);
    let csca = report.csca.expect("CSCA");
    assert!(csca.subject.contains("CSCA UT"));
    assert_eq!(csca.key_id.map(|id| id.len()), Some(40));
    assert_eq!(report.revocation, Revocation::NotChecked);
    assert!(
        report.content_problems.is_empty(),
        "{:?}",
        report.content_problems
    );
}

#[test]
fn every_supported_algorithm_signs_and_chains() {
    use KeyAlgorithm::*;
    let pairs = [
        (Rsa(2048), Rsa(2048)),
        (RsaPss(2048), P256),
        (P384, RsaPss(2048)),
        (P521, P384),
        (BrainpoolP256r1, BrainpoolP256r1),
        (BrainpoolP384r1, P521),
        (P256, BrainpoolP384r1),
    ];
    for (csca, signer) in pairs {
        let world = World::new(csca, signer);
        for hash in [
            HashAlgorithm::Sha1,
            HashAlgorithm::Sha256,
            HashAlgorithm::Sha512,
        ] {
            let chip = world.chip(&ChipSpec { hash, ..specimen() });
            let report = world.verify(chip.files(None), None);
            assert_eq!(
                report.passive_authentication,
                PassiveAuthentication::Passed,
                "CSCA {csca:?}, signer {signer:?}, hash {hash:?}"
            );
        }
    }
}

#[test]
fn keys_with_explicit_curve_parameters_are_recognised() {
    let at = now();
    for algorithm in [
        KeyAlgorithm::BrainpoolP256r1,
        KeyAlgorithm::P256,
        KeyAlgorithm::P384,
    ] {
        let key = SigningKey::generate(algorithm).with_explicit_parameters();
        let mut csca = Csca::with_key("DE", key, at.minus(YEAR), at.plus(10 * YEAR));
        let signer_key = SigningKey::generate(algorithm).with_explicit_parameters();
        let signer = csca.issue_with_key(signer_key, at.minus(DAY), at.plus(YEAR));
        let mut trust = TrustStore::empty();
        trust.add_certificates(&csca.certificate).unwrap();
        let chip = Chip::build(&specimen(), &signer);
        let report = common::verify(&trust, chip.files(None), None);
        assert_eq!(
            report.passive_authentication,
            PassiveAuthentication::Passed,
            "{algorithm:?}"
        );
    }
}

/// Flips the last byte of a file (inside its value, so the file still parses as one TLV).
fn flip(bytes: &mut [u8]) {
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
}

#[test]
fn a_flipped_byte_in_any_data_group_is_a_hash_mismatch_naming_it() {
    let world = World::ec();
    let spec = ChipSpec {
        dg11: Some(Dg11Spec {
            full_name: "ERIKSSON<<ANNA".into(),
            ..Dg11Spec::default()
        }),
        chip_authentication: true,
        ..common::with_aa(KeyAlgorithm::P256, HashAlgorithm::Sha256)
    };
    let chip = world.chip(&spec);
    for group in [
        DataGroup::Dg1,
        DataGroup::Dg2,
        DataGroup::Dg11,
        DataGroup::Dg14,
        DataGroup::Dg15,
    ] {
        let mut files = chip.files(None);
        let file = match group {
            DataGroup::Dg1 => &mut files.dg1,
            DataGroup::Dg2 => &mut files.dg2,
            DataGroup::Dg11 => files.dg11.as_mut().unwrap(),
            DataGroup::Dg14 => files.dg14.as_mut().unwrap(),
            DataGroup::Dg15 => files.dg15.as_mut().unwrap(),
        };
        flip(file);
        let report = world.verify(files, None);
        assert_eq!(
            failure(&report),
            PassiveFailure::HashMismatch(group),
            "{group}"
        );
        assert!(!report.data_groups_verified.contains(&group));
        assert_eq!(
            report.data_groups_verified.len(),
            4,
            "the other groups still match"
        );
        assert!(report.authentic_mrz().is_none());
    }
}

#[test]
fn a_data_group_the_sod_does_not_cover_is_not_signed() {
    let world = World::ec();
    let chip = world.chip(&specimen());
    let mut files = chip.files(None);
    files.dg11 = Some(idconsent_emrtd::fixtures::dg11(&Dg11Spec::default()));
    let report = world.verify(files, None);
    assert_eq!(failure(&report), PassiveFailure::NotSigned(DataGroup::Dg11));
}

#[test]
fn a_sod_whose_signature_was_altered_is_refused() {
    let world = World::ec();
    let chip = world.chip(&specimen());
    let mut files = chip.files(None);
    files.sod = sod(
        &world.signer,
        HashAlgorithm::Sha256,
        &[(1, &chip.dg1), (2, &chip.dg2)],
        true,
    );
    let report = world.verify(files, None);
    assert_eq!(failure(&report), PassiveFailure::SignatureInvalid);
    // The hashes themselves match: only the signature is wrong.
    assert_eq!(
        report.data_groups_verified,
        [DataGroup::Dg1, DataGroup::Dg2]
    );
}

#[test]
fn a_document_signer_from_an_untrusted_csca_fails() {
    let world = World::ec();
    // Same country name, another key: the names match, the signature does not.
    let mut impostor = Csca::new("UT", KeyAlgorithm::P256, now());
    let signer = impostor.issue(KeyAlgorithm::P256, now().minus(DAY), now().plus(YEAR));
    let chip = Chip::build(&specimen(), &signer);
    let report = world.verify(chip.files(None), None);
    assert_eq!(failure(&report), PassiveFailure::UntrustedDocumentSigner);
    assert!(report.csca.is_none());
    // Claiming the trusted CSCA's name and key id: only the signature tells.
    let mut claimant = Csca::impostor_of(&world.csca, KeyAlgorithm::P256);
    let signer = claimant.issue(KeyAlgorithm::P256, now().minus(DAY), now().plus(YEAR));
    let report = world.verify(Chip::build(&specimen(), &signer).files(None), None);
    assert_eq!(failure(&report), PassiveFailure::UntrustedDocumentSigner);
    // And nothing is trusted by default.
    let report = common::verify(
        &TrustStore::empty(),
        world.chip(&specimen()).files(None),
        None,
    );
    assert_eq!(failure(&report), PassiveFailure::UntrustedDocumentSigner);
}

#[test]
fn expired_and_not_yet_valid_certificates_fail() {
    let at = now();
    let mut world = World::ec();
    let expired = world
        .csca
        .issue(KeyAlgorithm::P256, at.minus(3 * YEAR), at.minus(DAY));
    let report = world.verify(Chip::build(&specimen(), &expired).files(None), None);
    assert_eq!(
        failure(&report),
        PassiveFailure::Expired(CertificateRole::DocumentSigner)
    );

    let future = world
        .csca
        .issue(KeyAlgorithm::P256, at.plus(DAY), at.plus(YEAR));
    let report = world.verify(Chip::build(&specimen(), &future).files(None), None);
    assert_eq!(
        failure(&report),
        PassiveFailure::NotYetValid(CertificateRole::DocumentSigner)
    );

    let old_key = SigningKey::generate(KeyAlgorithm::P256);
    let mut old_csca = Csca::with_key("UT", old_key, at.minus(12 * YEAR), at.minus(YEAR));
    let signer = old_csca.issue(KeyAlgorithm::P256, at.minus(2 * YEAR), at.plus(YEAR));
    let mut trust = TrustStore::empty();
    trust.add_certificates(&old_csca.certificate).unwrap();
    let report = common::verify(&trust, Chip::build(&specimen(), &signer).files(None), None);
    assert_eq!(
        failure(&report),
        PassiveFailure::Expired(CertificateRole::Csca)
    );
}

#[test]
fn a_document_signer_on_its_cscas_crl_is_revoked() {
    let at = now();
    let mut world = World::ec();
    let revoked = world
        .csca
        .issue(KeyAlgorithm::P256, at.minus(DAY), at.plus(YEAR));
    let crl = world
        .csca
        .crl(&[&revoked], at.minus(DAY), at.plus(30 * DAY));
    world.trust.add_crl(&crl).unwrap();

    let report = world.verify(Chip::build(&specimen(), &revoked).files(None), None);
    assert_eq!(failure(&report), PassiveFailure::Revoked);
    assert_eq!(report.revocation, Revocation::Revoked);

    let report = world.verify(world.chip(&specimen()).files(None), None);
    assert_eq!(report.passive_authentication, PassiveAuthentication::Passed);
    assert_eq!(report.revocation, Revocation::NotRevoked { stale: false });
}

#[test]
fn a_crl_not_signed_by_a_trusted_csca_is_refused() {
    let at = now();
    let mut world = World::ec();
    let mut other = Csca::new("UT", KeyAlgorithm::P256, at);
    let crl = other.crl(&[&world.signer], at.minus(DAY), at.plus(DAY));
    assert!(world.trust.add_crl(&crl).is_err());
    let _ = other.issue(KeyAlgorithm::P256, at, at.plus(DAY));
    let report = world.verify(world.chip(&specimen()).files(None), None);
    assert_eq!(report.passive_authentication, PassiveAuthentication::Passed);
    assert_eq!(report.revocation, Revocation::NotChecked);
}

#[test]
fn a_stale_crl_still_revokes_and_is_reported_stale() {
    let at = now();
    let mut world = World::ec();
    let crl = world.csca.crl(&[], at.minus(60 * DAY), at.minus(30 * DAY));
    world.trust.add_crl(&crl).unwrap();
    let report = world.verify(world.chip(&specimen()).files(None), None);
    assert_eq!(report.revocation, Revocation::NotRevoked { stale: true });
}

/// Replaces the first occurrence of `from` in `bytes` with `to` (same length).
#[allow(clippy::expect_used)]
fn replace(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    let at = bytes
        .windows(from.len())
        .position(|window| window == from)
        .expect("pattern present");
    bytes[at..at + to.len()].copy_from_slice(to);
}

#[test]
fn a_forged_data_group_with_its_hash_rewritten_in_the_sod_is_refused() {
    let world = World::ec();
    let chip = world.chip(&specimen());
    // The forger changes the birth date in DG1 and writes the new hash into the SOD's security
    // object; every length stays the same, the signature is untouched.
    let forged_dg1 = idconsent_emrtd::fixtures::dg1(&idconsent_verification::mrz::compose_td3(
        "P",
        "UTO",
        "ERIKSSON",
        "ANNA MARIA",
        "L898902C3",
        "UTO",
        "940812",
        'F',
        "320415",
        "",
    ));
    let mut files = chip.files(None);
    let genuine = HashAlgorithm::Sha256.digest(&[&chip.dg1]);
    let forged = HashAlgorithm::Sha256.digest(&[&forged_dg1]);
    replace(&mut files.sod, &genuine, &forged);
    files.dg1 = forged_dg1;
    let report = world.verify(files, None);
    // The message-digest attribute no longer matches the security object.
    assert_eq!(failure(&report), PassiveFailure::SignatureInvalid);
    assert!(report.authentic_mrz().is_none());
}
