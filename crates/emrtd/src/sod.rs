//! EF.SOD (ICAO 9303-10 §4.6.2): tag 0x77 around a CMS SignedData whose content is the
//! `LDSSecurityObject` — the hash algorithm and one hash per data group.

use der::Decode;
use der::asn1::ObjectIdentifier;
use idconsent_verification::chip::{PassiveFailure, SOD_TAG};

use crate::algorithms::HashAlgorithm;
use crate::oids;
use crate::signed::{self, CmsError, Signed};
use crate::tlv;

/// ICAO 9303 numbers data groups 1 to 16; a SOD lists at most one hash for each.
pub(crate) const MAX_DATA_GROUPS: usize = 16;

/// (data group number, hash), in the SOD's order.
type DataGroupHashes = Vec<(u8, Vec<u8>)>;

#[derive(Debug)]
pub(crate) struct Sod {
    pub hash: HashAlgorithm,
    pub hashes: DataGroupHashes,
    pub signed: Signed,
}

impl Sod {
    pub(crate) fn hash_of(&self, number: u8) -> Option<&[u8]> {
        self.hashes
            .iter()
            .find(|(listed, _)| *listed == number)
            .map(|(_, hash)| hash.as_slice())
    }
}

pub(crate) fn failure(error: CmsError) -> PassiveFailure {
    match error {
        CmsError::Structure(what) => PassiveFailure::BadStructure(what),
        CmsError::Unsupported(what) => PassiveFailure::UnsupportedAlgorithm(what),
        CmsError::SignatureInvalid => PassiveFailure::SignatureInvalid,
    }
}

fn bad(what: impl std::fmt::Display) -> PassiveFailure {
    PassiveFailure::BadStructure(what.to_string())
}

pub(crate) fn parse(sod: &[u8]) -> Result<Sod, PassiveFailure> {
    let wrapper = tlv::single(sod, u32::from(SOD_TAG)).map_err(bad)?;
    let signed = signed::parse(wrapper.value, oids::LDS_SECURITY_OBJECT).map_err(failure)?;
    let (hash, hashes) = security_object(&signed.content)?;
    Ok(Sod {
        hash,
        hashes,
        signed,
    })
}

/// `LDSSecurityObject ::= SEQUENCE { version INTEGER, hashAlgorithm AlgorithmIdentifier,
/// dataGroupHashValues SEQUENCE SIZE (2..16) OF DataGroupHash, ldsVersionInfo … OPTIONAL }`.
fn security_object(der: &[u8]) -> Result<(HashAlgorithm, DataGroupHashes), PassiveFailure> {
    let sequence = tlv::single(der, 0x30).map_err(bad)?;
    let mut fields = tlv::children(sequence.value);
    let mut next = |what: &str| {
        fields
            .next()
            .ok_or_else(|| bad(format!("LDS security object without {what}")))?
            .map_err(bad)
    };
    let version = next("version")?;
    if version.tag != 0x02 || !matches!(version.value, [0] | [1]) {
        return Err(bad("LDS security object version must be 0 or 1"));
    }
    let algorithm = next("hash algorithm")?;
    let oid = tlv::require(algorithm.value, 0x06).map_err(bad)?;
    let oid = ObjectIdentifier::from_der(oid.raw).map_err(bad)?;
    let hash = HashAlgorithm::from_oid(&oid)
        .ok_or_else(|| PassiveFailure::UnsupportedAlgorithm(format!("hash {oid}")))?;
    let values = next("data group hashes")?;
    if values.tag != 0x30 {
        return Err(bad("data group hashes must be a SEQUENCE"));
    }
    let mut hashes: Vec<(u8, Vec<u8>)> = Vec::new();
    for entry in tlv::children(values.value) {
        // Checked before anything is stored: a SOD claiming thousands of hashes stops here.
        if hashes.len() == MAX_DATA_GROUPS {
            return Err(bad("more than 16 data group hashes"));
        }
        let entry = entry.map_err(bad)?;
        let mut parts = tlv::children(entry.value);
        let number = parts.next().transpose().map_err(bad)?;
        let value = parts.next().transpose().map_err(bad)?;
        let (Some(number), Some(value), None) = (number, value, parts.next()) else {
            return Err(bad("a data group hash is not (number, hash)"));
        };
        let number = match (number.tag, number.value) {
            (0x02, [n]) if (1..=16).contains(n) => *n,
            _ => return Err(bad("data group number outside 1..16")),
        };
        if value.tag != 0x04 || value.value.len() != hash.len() {
            return Err(bad("a data group hash has the wrong length"));
        }
        if hashes.iter().any(|(listed, _)| *listed == number) {
            return Err(bad("a data group is listed twice"));
        }
        hashes.push((number, value.value.to_vec()));
    }
    if hashes.is_empty() {
        return Err(bad("no data group hashes"));
    }
    Ok((hash, hashes))
}
