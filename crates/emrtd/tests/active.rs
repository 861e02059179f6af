//! Active authentication: the chip signs this server's fresh challenge with DG15's key
//! (RSA ISO/IEC 9796-2 scheme 1, ECDSA plain r‖s); clones and replays fail.

mod common;

use common::{CHALLENGE, World, answered, specimen, with_aa};
use idconsent_emrtd::fixtures::{HashAlgorithm, KeyAlgorithm, SigningKey};
use idconsent_verification::chip::{AaKeyType, ActiveAuthentication, ActiveFailure};

fn failed(report: &idconsent_verification::chip::ChipReport) -> ActiveFailure {
    match &report.active_authentication {
        ActiveAuthentication::Failed(failure) => failure.clone(),
        other => panic!("active authentication was {other:?}"),
    }
}

#[test]
fn rsa_and_ecdsa_chips_answer_the_issued_challenge() {
    let world = World::ec();
    let cases = [
        (KeyAlgorithm::Rsa(1024), HashAlgorithm::Sha1),
        (KeyAlgorithm::Rsa(2048), HashAlgorithm::Sha256),
        (KeyAlgorithm::Rsa(2048), HashAlgorithm::Sha512),
        (KeyAlgorithm::P256, HashAlgorithm::Sha256),
        (KeyAlgorithm::P256, HashAlgorithm::Sha1),
        (KeyAlgorithm::P384, HashAlgorithm::Sha384),
        (KeyAlgorithm::P521, HashAlgorithm::Sha512),
        (KeyAlgorithm::BrainpoolP256r1, HashAlgorithm::Sha256),
        (KeyAlgorithm::BrainpoolP384r1, HashAlgorithm::Sha384),
    ];
    for (algorithm, hash) in cases {
        let chip = world.chip(&with_aa(algorithm, hash));
        let report = world.verify(answered(&chip), Some(CHALLENGE));
        assert_eq!(
            report.active_authentication,
            ActiveAuthentication::Passed,
            "{algorithm:?} {hash:?}"
        );
        assert!(report.proves_original_chip());
        let expected = match algorithm {
            KeyAlgorithm::Rsa(bits) => AaKeyType::Rsa { bits: bits as u32 },
            KeyAlgorithm::P256 => AaKeyType::Ecdsa {
                curve: "P-256".into(),
            },
            KeyAlgorithm::P384 => AaKeyType::Ecdsa {
                curve: "P-384".into(),
            },
            KeyAlgorithm::P521 => AaKeyType::Ecdsa {
                curve: "P-521".into(),
            },
            KeyAlgorithm::BrainpoolP256r1 => AaKeyType::Ecdsa {
                curve: "brainpoolP256r1".into(),
            },
            KeyAlgorithm::BrainpoolP384r1 => AaKeyType::Ecdsa {
                curve: "brainpoolP384r1".into(),
            },
            KeyAlgorithm::RsaPss(_) => unreachable!(),
        };
        assert_eq!(report.active_authentication_key, Some(expected));
    }
}

#[test]
fn an_answer_by_another_key_is_a_clone() {
    let world = World::ec();
    for algorithm in [KeyAlgorithm::Rsa(2048), KeyAlgorithm::P256] {
        let chip = world.chip(&with_aa(algorithm, HashAlgorithm::Sha256));
        // The clone copied every file but not the chip's private key.
        let other = SigningKey::rsa_slot(algorithm, 7);
        let signature = other.answer_challenge(&CHALLENGE, HashAlgorithm::Sha256);
        let report = world.verify(chip.files(Some((&CHALLENGE, signature))), Some(CHALLENGE));
        assert_eq!(
            failed(&report),
            ActiveFailure::SignatureInvalid,
            "{algorithm:?}"
        );
        // Passive authentication still passes: a clone carries genuine signed data.
        assert!(report.passive_authentication.passed());
        assert!(!report.proves_original_chip());
    }
}

#[test]
fn a_recorded_answer_to_an_old_challenge_fails() {
    let world = World::ec();
    for algorithm in [KeyAlgorithm::Rsa(2048), KeyAlgorithm::P256] {
        let chip = world.chip(&with_aa(algorithm, HashAlgorithm::Sha256));
        let old = [9u8; 8];
        let recorded = chip.answer(&old);
        // Replayed as it was recorded: its challenge is not the one issued now.
        let replay = chip.files(Some((&old, recorded.clone())));
        assert_eq!(
            failed(&world.verify(replay, Some(CHALLENGE))),
            ActiveFailure::ChallengeMismatch
        );
        // Presented with the fresh challenge: the signature is over the old one.
        let relabelled = chip.files(Some((&CHALLENGE, recorded)));
        assert_eq!(
            failed(&world.verify(relabelled, Some(CHALLENGE))),
            ActiveFailure::SignatureInvalid,
            "{algorithm:?}"
        );
    }
}

#[test]
fn the_outcomes_without_a_key_an_answer_or_an_issued_challenge() {
    let world = World::ec();
    // No DG15: the chip cannot do AA, whatever was sent.
    let plain = world.chip(&specimen());
    let report = world.verify(
        plain.files(Some((&CHALLENGE, vec![1; 64]))),
        Some(CHALLENGE),
    );
    assert_eq!(
        report.active_authentication,
        ActiveAuthentication::NotSupported
    );
    assert!(report.passive_authentication.passed());
    assert!(!report.proves_original_chip());

    let chip = world.chip(&with_aa(KeyAlgorithm::P256, HashAlgorithm::Sha256));
    let report = world.verify(chip.files(None), Some(CHALLENGE));
    assert_eq!(
        report.active_authentication,
        ActiveAuthentication::NotAttempted
    );

    let report = world.verify(answered(&chip), None);
    assert_eq!(failed(&report), ActiveFailure::ChallengeNotIssued);
}

#[test]
fn a_dg15_the_sod_does_not_vouch_for_proves_nothing() {
    let world = World::ec();
    let chip = world.chip(&with_aa(KeyAlgorithm::P256, HashAlgorithm::Sha256));
    // The attacker's own key in DG15, answering correctly.
    let attacker = SigningKey::generate(KeyAlgorithm::P256);
    let mut files = chip.files(Some((
        &CHALLENGE,
        attacker.answer_challenge(&CHALLENGE, HashAlgorithm::Sha256),
    )));
    files.dg15 = Some(idconsent_emrtd::fixtures::dg15(&attacker));
    let report = world.verify(files, Some(CHALLENGE));
    assert_eq!(failed(&report), ActiveFailure::KeyNotAuthenticated);
    assert!(!report.passive_authentication.passed());
}

#[test]
fn without_dg14_the_ecdsa_hash_follows_the_key_size() {
    let world = World::ec();
    // The SOD covers DG14, but a data group that is not sent is not checked.
    let matching = world.chip(&with_aa(KeyAlgorithm::P384, HashAlgorithm::Sha384));
    let mut files = answered(&matching);
    files.dg14 = None;
    let report = world.verify(files, Some(CHALLENGE));
    assert_eq!(report.active_authentication, ActiveAuthentication::Passed);

    // A chip that signs with SHA-1 needs DG14 to say so.
    let sha1 = world.chip(&with_aa(KeyAlgorithm::P256, HashAlgorithm::Sha1));
    let mut files = answered(&sha1);
    files.dg14 = None;
    assert_eq!(
        failed(&world.verify(files, Some(CHALLENGE))),
        ActiveFailure::SignatureInvalid
    );
    assert_eq!(
        world
            .verify(answered(&sha1), Some(CHALLENGE))
            .active_authentication,
        ActiveAuthentication::Passed
    );
}
