//! Active Authentication (ICAO 9303-11 §6.1): the chip signs the server's 8-byte challenge
//! with the private key whose public half is DG15.
//!
//! - RSA: ISO/IEC 9796-2 digital signature scheme 1 with partial message recovery. The raw
//!   public operation recovers `F = header ‖ M1 ‖ H ‖ trailer`, where M1 is the chip's nonce,
//!   the challenge is the non-recoverable part M2, and `H = Hash(M1 ‖ M2)`. The trailer is
//!   `BC` (SHA-1) or `hh CC` with the ISO/IEC 10118-3 hash identifier `hh`.
//! - ECDSA: a plain r‖s signature (BSI TR-03111) over the hash of the challenge, the hash named
//!   by DG14's `ActiveAuthenticationInfo` or else the one matching the key size.

use idconsent_verification::chip::ActiveFailure;
use rsa::BoxedUint;
use rsa::traits::PublicKeyParts;

use crate::algorithms::{HashAlgorithm, PublicKey, SignatureError};
use crate::curves::EcdsaEncoding;

/// Why an ISO/IEC 9796-2 block was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iso9796Error {
    /// The signature is not an integer below the modulus, or not the modulus's length.
    BadRepresentative,
    /// The block does not start with `01`, does not announce partial recovery, or its padding
    /// is not `B…BA`.
    BadHeader,
    /// The last byte is neither `BC` nor `CC`.
    BadTrailer,
    /// The trailer names a hash this verifier does not implement.
    UnsupportedHash(u8),
    /// The block is too short for the hash.
    TooShort,
    /// `Hash(M1 ‖ M2)` is not the hash in the block.
    HashMismatch,
}

/// The raw RSA public operation on `signature`: the recovered block, as long as the modulus.
pub(crate) fn recover(key: &rsa::RsaPublicKey, signature: &[u8]) -> Result<Vec<u8>, Iso9796Error> {
    let modulus_len = key.size();
    if signature.len() != modulus_len {
        return Err(Iso9796Error::BadRepresentative);
    }
    let precision = key.n().as_ref().bits_precision();
    let value = BoxedUint::from_be_slice(signature, precision)
        .map_err(|_| Iso9796Error::BadRepresentative)?;
    if value >= *key.n().as_ref() {
        return Err(Iso9796Error::BadRepresentative);
    }
    let block =
        rsa::hazmat::rsa_encrypt(key, &value).map_err(|_| Iso9796Error::BadRepresentative)?;
    let bytes = block.to_be_bytes();
    let start = bytes.len().saturating_sub(modulus_len);
    Ok(bytes[start..].to_vec())
}

/// Checks a recovered block against the non-recoverable message `m2` (the challenge).
pub fn check_block(block: &[u8], m2: &[u8]) -> Result<(), Iso9796Error> {
    let (&first, _) = block.split_first().ok_or(Iso9796Error::TooShort)?;
    let (&last, _) = block.split_last().ok_or(Iso9796Error::TooShort)?;
    let (hash, trailer_len) = match last {
        0xBC => (HashAlgorithm::Sha1, 1),
        0xCC => {
            let id = *block
                .len()
                .checked_sub(2)
                .and_then(|at| block.get(at))
                .ok_or(Iso9796Error::TooShort)?;
            let hash = HashAlgorithm::from_iso_id(id).ok_or(Iso9796Error::UnsupportedHash(id))?;
            (hash, 2)
        }
        _ => return Err(Iso9796Error::BadTrailer),
    };
    // '01', partial recovery ('1'), then the padding: none ('0' + nibble A), or nibble B
    // followed by BB… and a closing BA.
    if first & 0xE0 != 0x60 {
        return Err(Iso9796Error::BadHeader);
    }
    let message_start = match first & 0x1F {
        0x0A => 1,
        0x0B => {
            let closing = block[1..]
                .iter()
                .position(|&byte| byte != 0xBB)
                .map(|offset| offset + 1)
                .ok_or(Iso9796Error::BadHeader)?;
            if block[closing] != 0xBA {
                return Err(Iso9796Error::BadHeader);
            }
            closing + 1
        }
        _ => return Err(Iso9796Error::BadHeader),
    };
    let hash_start = block
        .len()
        .checked_sub(trailer_len + hash.len())
        .filter(|start| *start >= message_start)
        .ok_or(Iso9796Error::TooShort)?;
    let m1 = &block[message_start..hash_start];
    let claimed = &block[hash_start..block.len() - trailer_len];
    if hash.digest(&[m1, m2]) != claimed {
        return Err(Iso9796Error::HashMismatch);
    }
    Ok(())
}

/// Verifies the chip's answer to `challenge` with the DG15 key.
pub(crate) fn verify(
    key: &PublicKey,
    dg14_hash: Option<HashAlgorithm>,
    challenge: &[u8],
    signature: &[u8],
) -> Result<(), ActiveFailure> {
    match key {
        PublicKey::Rsa(rsa_key) => {
            let block = recover(rsa_key, signature).map_err(|_| ActiveFailure::SignatureInvalid)?;
            check_block(&block, challenge).map_err(|error| match error {
                Iso9796Error::UnsupportedHash(id) => {
                    ActiveFailure::UnsupportedAlgorithm(format!("ISO/IEC 10118-3 hash 0x{id:02X}"))
                }
                _ => ActiveFailure::SignatureInvalid,
            })
        }
        PublicKey::Ec { curve, point } => {
            let hash = dg14_hash.unwrap_or_else(|| curve.default_hash());
            let digest = hash.digest(&[challenge]);
            // TR-03111 says plain r‖s; a DER signature is accepted too (some chips send it).
            let encoding = if signature.len() == 2 * curve.field_len() {
                EcdsaEncoding::Plain
            } else {
                EcdsaEncoding::Der
            };
            curve
                .verify(point, &digest, signature, encoding)
                .map_err(|_| ActiveFailure::SignatureInvalid)
        }
    }
}

pub(crate) fn key_failure(error: SignatureError) -> ActiveFailure {
    match error {
        SignatureError::Unsupported(what) => ActiveFailure::UnsupportedAlgorithm(what),
        SignatureError::BadKey(what) => ActiveFailure::BadKey(what),
        SignatureError::Invalid => ActiveFailure::BadKey("unusable key".to_owned()),
    }
}
