//! Hostile chips: huge claimed lengths, deep nesting, a SOD listing thousands of hashes, a
//! facial record claiming a 4 GB image, oversized keys. Each must fail fast and cleanly, and
//! the bound is asserted, not only the status: the verifier's total allocation for a hostile
//! file stays within a small multiple of the file (counted by an instrumented allocator), and
//! it answers within milliseconds.
//!
//! One test function only: the allocator counts every thread, so nothing may run beside it.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::alloc::System;
use std::time::{Duration, Instant};

use common::{World, now, specimen};
use idconsent_emrtd::fixtures::{HashAlgorithm, facial_record, sod};
use idconsent_emrtd::verify_blocking;
use idconsent_verification::chip::{
    ActiveAuthentication, ActiveFailure, ChipCheck, ChipEvidence, ChipEvidenceError, ChipFiles,
    ChipReport, DataGroup, MAX_SOD, PassiveAuthentication, PassiveFailure,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// TLV with DER lengths.
fn tlv(tag: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = value.len();
    match len {
        0..=0x7F => out.push(len as u8),
        0x80..=0xFF => out.extend([0x81, len as u8]),
        _ => out.extend([0x82, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(value);
    out
}

struct Measured {
    report: ChipReport,
    allocated: usize,
    elapsed: Duration,
}

fn measure(world: &World, files: ChipFiles) -> Measured {
    let check = ChipCheck {
        evidence: ChipEvidence::new(files).unwrap(),
        issued_challenge: Some(common::CHALLENGE),
        at: now(),
    };
    let started = Instant::now();
    let region = Region::new(GLOBAL);
    let report = verify_blocking(&world.trust, &check);
    let allocated = region.change().bytes_allocated;
    Measured {
        report,
        allocated,
        elapsed: started.elapsed(),
    }
}

/// The bound each hostile case must stay under: a few copies of the input plus a fixed
/// allowance for the certificate and report structures.
fn assert_bounded(case: &str, measured: &Measured, input: usize) {
    let bound = 4 * input + 256 * 1024;
    println!(
        "{case}: {} bytes allocated for {input} input bytes, {:?}",
        measured.allocated, measured.elapsed
    );
    assert!(
        measured.allocated <= bound,
        "{case}: allocated {} > {bound}",
        measured.allocated
    );
    assert!(
        measured.elapsed < Duration::from_millis(500),
        "{case}: {:?}",
        measured.elapsed
    );
}

fn passive_failure(report: &ChipReport) -> PassiveFailure {
    match &report.passive_authentication {
        PassiveAuthentication::Failed(failure) => failure.clone(),
        PassiveAuthentication::Passed => panic!("passed"),
    }
}

#[test]
fn hostile_chips_fail_fast_within_a_bounded_allocation() {
    let world = World::ec();
    let chip = world.chip(&specimen());
    let base = chip.files(None);

    // The API's own bound: a SOD over 64 KiB or claiming 2^31 bytes never reaches a parser.
    let mut oversized = base.clone();
    oversized.sod = tlv(0x77, &vec![0; MAX_SOD]);
    assert!(matches!(
        ChipEvidence::new(oversized),
        Err(ChipEvidenceError::TooLarge { field: "sod", .. })
    ));
    let mut claims = base.clone();
    claims.sod = vec![0x77, 0x84, 0x80, 0x00, 0x00, 0x00, 0x30, 0x00];
    assert!(ChipEvidence::new(claims).is_err());

    // A ContentInfo inside a well-formed 0x77 claiming 2^31 bytes.
    let mut huge_length = base.clone();
    let mut inner = vec![0x30, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x06, 0x09];
    inner.resize(60_000, 0x42);
    huge_length.sod = tlv(0x77, &inner);
    let input = huge_length.sod.len();
    let measured = measure(&world, huge_length);
    assert!(matches!(
        passive_failure(&measured.report),
        PassiveFailure::BadStructure(_)
    ));
    assert_bounded("2^31 length", &measured, input);

    // 15,000 nested SEQUENCEs (60 KB) where the SignedData should be.
    let mut nested = Vec::new();
    for _ in 0..15_000 {
        nested = tlv(0x30, &nested);
        if nested.len() > 60_000 {
            break;
        }
    }
    let content_info = tlv(
        0x30,
        &[
            vec![
                0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02,
            ],
            tlv(0xA0, &nested),
        ]
        .concat(),
    );
    let mut deep = base.clone();
    deep.sod = tlv(0x77, &content_info);
    let input = deep.sod.len();
    let measured = measure(&world, deep);
    assert!(matches!(
        passive_failure(&measured.report),
        PassiveFailure::BadStructure(_)
    ));
    assert_bounded("deep nesting", &measured, input);

    // A correctly signed SOD listing 2,000 data group hashes.
    let groups: Vec<(u8, &[u8])> = (0..2_000)
        .map(|i| ((i % 16 + 1) as u8, &b"x"[..]))
        .collect();
    let mut many = base.clone();
    many.sod = sod(&world.signer, HashAlgorithm::Sha1, &groups, false);
    let input = many.sod.len();
    assert!(input < MAX_SOD, "{input}");
    let measured = measure(&world, many);
    assert_eq!(
        passive_failure(&measured.report),
        PassiveFailure::BadStructure("more than 16 data group hashes".into())
    );
    assert_bounded("2,000 hashes", &measured, input);

    // A facial record that claims a 4 GB image.
    let mut record = facial_record(&idconsent_emrtd::fixtures::portrait_jpeg());
    record[14..18].copy_from_slice(&u32::MAX.to_be_bytes());
    let dg2 = tlv(
        0x75,
        &[
            vec![0x7F, 0x61],
            tlv_long(&[tlv(0x02, &[1]), tlv_7f60(&record)].concat()),
        ]
        .concat(),
    );
    let mut big_image = base.clone();
    big_image.dg2 = dg2;
    let input = big_image.dg2.len();
    let measured = measure(&world, big_image);
    assert!(measured.report.portrait.is_none());
    assert!(
        measured
            .report
            .content_problems
            .iter()
            .any(|problem| problem.data_group == DataGroup::Dg2),
        "{:?}",
        measured.report.content_problems
    );
    assert_bounded("4 GB image claim", &measured, input);

    // An AA key of 9,000 bits and one with a 64-bit exponent: refused before any arithmetic.
    for (modulus_bytes, exponent) in [(1125usize, vec![1, 0, 1]), (256, vec![0xFF; 8])] {
        let mut modulus = vec![0xC5; modulus_bytes];
        modulus[modulus_bytes - 1] = 0x01;
        let rsa_key = tlv(
            0x30,
            &[
                tlv(0x02, &[&[0u8][..], &modulus].concat()),
                tlv(0x02, &exponent),
            ]
            .concat(),
        );
        let spki = tlv(
            0x30,
            &[
                tlv(
                    0x30,
                    &[
                        vec![
                            0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01,
                        ],
                        vec![0x05, 0x00],
                    ]
                    .concat(),
                ),
                tlv(0x03, &[&[0u8][..], &rsa_key].concat()),
            ]
            .concat(),
        );
        let mut hostile_key = base.clone();
        hostile_key.dg15 = Some(tlv(0x6F, &spki));
        hostile_key.active_authentication =
            Some(idconsent_verification::chip::ActiveAuthenticationAnswer {
                challenge: common::CHALLENGE.to_vec(),
                signature: vec![1; 512],
            });
        let input = hostile_key.dg15.as_ref().map_or(0, Vec::len);
        let measured = measure(&world, hostile_key);
        // DG15 is not in the SOD, so the key is refused as unauthenticated before it is used.
        assert_eq!(
            measured.report.active_authentication,
            ActiveAuthentication::Failed(ActiveFailure::KeyNotAuthenticated)
        );
        assert_eq!(measured.report.active_authentication_key, None);
        assert_bounded("oversized RSA key", &measured, input);
    }

    // The baseline: a valid chip, for the figures.
    let measured = measure(&world, base.clone());
    assert!(measured.report.passive_authentication.passed());
    println!(
        "valid chip: {} bytes allocated, {:?}",
        measured.allocated, measured.elapsed
    );
}

fn tlv_long(value: &[u8]) -> Vec<u8> {
    let len = value.len();
    let mut out = vec![0x82, (len >> 8) as u8, len as u8];
    out.extend_from_slice(value);
    out
}

fn tlv_7f60(record: &[u8]) -> Vec<u8> {
    [
        vec![0x7F, 0x60],
        tlv_long(&[vec![0x5F, 0x2E], tlv_long(record)].concat()),
    ]
    .concat()
}
