//! Authorization codes: `ac_<id>_<secret>`.
//!
//! The id (a ULID: 48 bits of time, 80 random bits) finds the grant; the secret (256 random
//! bits) proves possession, checked as a keyed hash of the whole code, compared in constant
//! time. Time-ordered ids keep the grants of one moment together in the store's index, so an
//! exchange reads and rewrites pages that recent approvals just wrote instead of a random page
//! per code, and the id alone, which says nothing secret, is all the store is asked about.
//!
//! Codes issued before ids existed (`ac_` and 64 hex digits) are found by their hash, which is
//! the id their grants were given when the store gained ids.

use idconsent_kernel::id::Entropy;
use idconsent_kernel::{IdGenerator, KeyedHash, RandomSource};

const PREFIX: &str = "ac_";
const HASH_PURPOSE: &str = "oauth-code";
/// A ULID in Crockford base32.
const ID_LEN: usize = 26;
/// Hex digits of the secret, and of a whole code of the first format.
const SECRET_HEX: usize = 64;

/// A new code, what the store keeps of it, and the code itself.
#[derive(Debug, Clone)]
pub(crate) struct NewCode {
    pub code: String,
    pub id: String,
    pub hash: String,
}

/// Where a presented code points: the grant id to read, and the hash it must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PresentedCode {
    pub id: String,
    pub hash: String,
}

pub(crate) fn issue(
    ids: &dyn IdGenerator,
    random: &dyn RandomSource,
    hasher: &dyn KeyedHash,
) -> NewCode {
    let id = ids.body(Entropy::Sortable);
    let code = format!("{PREFIX}{id}_{}", random.hex(SECRET_HEX / 2));
    let hash = hasher.hex(HASH_PURPOSE, code.as_bytes());
    NewCode { code, id, hash }
}

/// `None` for anything that is not a code of either format (no store access needed to refuse
/// it).
pub(crate) fn locate(code: &str, hasher: &dyn KeyedHash) -> Option<PresentedCode> {
    let body = code.strip_prefix(PREFIX)?;
    let hash = || hasher.hex(HASH_PURPOSE, code.as_bytes());
    match body.split_once('_') {
        Some((id, secret))
            if id.len() == ID_LEN
                && id.bytes().all(|b| b.is_ascii_alphanumeric())
                && is_hex(secret, SECRET_HEX) =>
        {
            Some(PresentedCode {
                id: id.to_owned(),
                hash: hash(),
            })
        }
        None if is_hex(body, SECRET_HEX) => {
            let hash = hash();
            Some(PresentedCode {
                id: hash.clone(),
                hash,
            })
        }
        _ => None,
    }
}

fn is_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use idconsent_kernel::{ManualClock, SeededRandom, Timestamp, UlidGenerator};

    use super::*;

    #[derive(Debug)]
    struct Sha256Hash;

    impl KeyedHash for Sha256Hash {
        fn hash(&self, purpose: &str, value: &[u8]) -> [u8; 32] {
            use sha2::{Digest, Sha256};
            Sha256::new()
                .chain_update(purpose)
                .chain_update(value)
                .finalize()
                .into()
        }
    }

    fn new_code() -> NewCode {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let random = Arc::new(SeededRandom::new(7));
        let ids = UlidGenerator::new(clock, random.clone());
        issue(&ids, random.as_ref(), &Sha256Hash)
    }

    #[test]
    fn a_new_code_leads_back_to_its_grant() {
        let new = new_code();
        assert!(
            new.code.starts_with(&format!("ac_{}_", new.id)),
            "{}",
            new.code
        );
        assert_eq!(new.code.len(), 3 + ID_LEN + 1 + SECRET_HEX);
        assert_eq!(
            locate(&new.code, &Sha256Hash),
            Some(PresentedCode {
                id: new.id.clone(),
                hash: new.hash.clone()
            })
        );
    }

    #[test]
    fn another_secret_has_another_hash() {
        let new = new_code();
        let forged = format!("ac_{}_{}", new.id, "0".repeat(SECRET_HEX));
        let presented = locate(&forged, &Sha256Hash).unwrap();
        assert_eq!(presented.id, new.id);
        assert_ne!(presented.hash, new.hash);
    }

    #[test]
    fn a_code_of_the_first_format_is_found_by_its_hash() {
        let old = format!("ac_{}", "ab".repeat(32));
        let presented = locate(&old, &Sha256Hash).unwrap();
        assert_eq!(presented.id, presented.hash);
        assert_eq!(presented.hash, Sha256Hash.hex_of(&old));
    }

    #[test]
    fn anything_else_is_no_code() {
        let new = new_code();
        for bad in [
            "",
            "ac_",
            "ac_nope",
            "xx_0123",
            &new.code[1..],
            &format!("{}0", new.code),
            &format!("ac_{}_{}", &new.id[1..], "0".repeat(SECRET_HEX)),
            &format!("ac_{}_{}", new.id, "g".repeat(SECRET_HEX)),
            &format!("ac_{}", "ab".repeat(31)),
        ] {
            assert_eq!(locate(bad, &Sha256Hash), None, "{bad}");
        }
    }

    impl Sha256Hash {
        fn hex_of(&self, code: &str) -> String {
            let hasher: &dyn KeyedHash = self;
            hasher.hex(HASH_PURPOSE, code.as_bytes())
        }
    }
}
