//! ISO/IEC 9796-2 scheme 1 recovered blocks: a table of the malformed headers and trailers, and
//! a property that any changed byte of a valid block is refused.

use idconsent_emrtd::fixtures::HashAlgorithm;
use idconsent_emrtd::{Iso9796Error, check_iso9796_block};
use proptest::prelude::*;

const CHALLENGE: [u8; 8] = *b"chal-123";

/// `header ‖ M1 ‖ Hash(M1 ‖ challenge) ‖ trailer` for a 128-byte modulus.
fn block(header: &[u8], hash: HashAlgorithm, trailer: &[u8], m1_seed: u8) -> Vec<u8> {
    let m1_len = 128 - header.len() - hash.len() - trailer.len();
    let m1: Vec<u8> = (0..m1_len)
        .map(|i| (i as u8).wrapping_mul(31) ^ m1_seed)
        .collect();
    let digest = hash.digest(&[&m1, &CHALLENGE[..]]);
    [header.to_vec(), m1, digest, trailer.to_vec()].concat()
}

#[test]
fn the_table_of_headers_and_trailers() {
    use HashAlgorithm::*;
    let cases: Vec<(&str, Vec<u8>, Result<(), Iso9796Error>)> = vec![
        (
            "SHA-1, implicit trailer BC",
            block(&[0x6A], Sha1, &[0xBC], 1),
            Ok(()),
        ),
        (
            "SHA-1, explicit 33CC",
            block(&[0x6A], Sha1, &[0x33, 0xCC], 1),
            Ok(()),
        ),
        (
            "SHA-224, 38CC",
            block(&[0x6A], Sha224, &[0x38, 0xCC], 1),
            Ok(()),
        ),
        (
            "SHA-256, 34CC",
            block(&[0x6A], Sha256, &[0x34, 0xCC], 1),
            Ok(()),
        ),
        (
            "SHA-384, 36CC",
            block(&[0x6A], Sha384, &[0x36, 0xCC], 1),
            Ok(()),
        ),
        (
            "SHA-512, 35CC",
            block(&[0x6A], Sha512, &[0x35, 0xCC], 1),
            Ok(()),
        ),
        (
            "padding B…BA",
            block(&[0x6B, 0xBB, 0xBB, 0xBA], Sha1, &[0xBC], 1),
            Ok(()),
        ),
        (
            "padding without its closing BA",
            block(&[0x6B, 0xBB, 0xBB, 0xBB], Sha1, &[0xBC], 1),
            Err(Iso9796Error::BadHeader),
        ),
        (
            "full recovery (4A): the challenge would not be covered",
            block(&[0x4A], Sha1, &[0xBC], 1),
            Err(Iso9796Error::BadHeader),
        ),
        (
            "header 00",
            block(&[0x00], Sha1, &[0xBC], 1),
            Err(Iso9796Error::BadHeader),
        ),
        (
            "header 2A",
            block(&[0x2A], Sha1, &[0xBC], 1),
            Err(Iso9796Error::BadHeader),
        ),
        (
            "header 6C",
            block(&[0x6C], Sha1, &[0xBC], 1),
            Err(Iso9796Error::BadHeader),
        ),
        (
            "trailer BD",
            block(&[0x6A], Sha1, &[0xBD], 1),
            Err(Iso9796Error::BadTrailer),
        ),
        (
            "trailer 00",
            block(&[0x6A], Sha1, &[0x00], 1),
            Err(Iso9796Error::BadTrailer),
        ),
        (
            "trailer naming WHIRLPOOL (37CC)",
            block(&[0x6A], Sha1, &[0x37, 0xCC], 1),
            Err(Iso9796Error::UnsupportedHash(0x37)),
        ),
        (
            "trailer naming SHA-256 over a SHA-1 hash",
            block(&[0x6A], Sha1, &[0x34, 0xCC], 1),
            Err(Iso9796Error::HashMismatch),
        ),
        (
            "too short for its hash",
            vec![0x6A, 0x01, 0xBC],
            Err(Iso9796Error::TooShort),
        ),
        ("empty", Vec::new(), Err(Iso9796Error::TooShort)),
    ];
    for (name, block, expected) in cases {
        assert_eq!(check_iso9796_block(&block, &CHALLENGE), expected, "{name}");
    }
    // The right block with another challenge.
    let valid = block(&[0x6A], Sha256, &[0x34, 0xCC], 1);
    assert_eq!(
        check_iso9796_block(&valid, b"chal-124"),
        Err(Iso9796Error::HashMismatch)
    );
}

proptest! {
    #[test]
    fn any_changed_byte_of_a_valid_block_is_refused(
        seed in any::<u8>(),
        position in 0usize..128,
        change in 1u8..=255,
        sha256 in any::<bool>(),
    ) {
        let valid = if sha256 {
            block(&[0x6A], HashAlgorithm::Sha256, &[0x34, 0xCC], seed)
        } else {
            block(&[0x6A], HashAlgorithm::Sha1, &[0xBC], seed)
        };
        prop_assert_eq!(check_iso9796_block(&valid, &CHALLENGE), Ok(()));
        let mut altered = valid.clone();
        altered[position] ^= change;
        prop_assert!(check_iso9796_block(&altered, &CHALLENGE).is_err());
    }
}
