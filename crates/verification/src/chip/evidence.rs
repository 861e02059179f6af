//! What the wallet read from the chip, as bytes whose size and outer TLV were checked on the way
//! in (parse, don't validate): a [`ChipEvidence`] always holds one well-formed TLV per file, with
//! the file's tag, within the bounds below.

use std::fmt;

/// The largest EF.DG1 accepted: its MRZ is at most 90 characters, 1 KiB leaves room for any
/// padding a chip adds.
pub const MAX_DG1: usize = 1024;
/// The largest EF.DG2 accepted: one compressed portrait is 15–40 KB; 1 MiB allows a large
/// JPEG 2000 without letting an upload grow the verifier's memory.
pub const MAX_DG2: usize = 1024 * 1024;
/// The largest EF.DG11, EF.DG14 and EF.DG15 accepted: a few hundred bytes to a few KB in
/// practice.
pub const MAX_SMALL_DG: usize = 64 * 1024;
/// The largest EF.SOD accepted: the LDS security object with its document signer certificate is
/// 2–5 KB; 64 KiB allows a certificate chain.
pub const MAX_SOD: usize = 64 * 1024;
/// The longest active-authentication signature: an RSA-8192 block (512 bytes) or an ECDSA
/// P-521 r‖s (132 bytes) is shorter.
pub const MAX_AA_SIGNATURE: usize = 1024;
/// An ICAO 9303-11 active-authentication challenge is exactly 8 bytes.
pub const CHALLENGE_LEN: usize = 8;

/// The chip files this service reads. DG3/DG4 (fingerprints, iris) need Extended Access Control
/// and are never sent; other data groups carry nothing the service uses.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum DataGroup {
    /// The MRZ.
    #[serde(rename = "DG1")]
    Dg1,
    /// The encoded face (the portrait).
    #[serde(rename = "DG2")]
    Dg2,
    /// Additional personal details (full name, place of birth, address).
    #[serde(rename = "DG11")]
    Dg11,
    /// Security infos: the chip's Chip Authentication key and AA algorithm.
    #[serde(rename = "DG14")]
    Dg14,
    /// The Active Authentication public key.
    #[serde(rename = "DG15")]
    Dg15,
}

impl DataGroup {
    pub const ALL: [DataGroup; 5] = [Self::Dg1, Self::Dg2, Self::Dg11, Self::Dg14, Self::Dg15];

    /// The number the SOD's `DataGroupHash` names it by.
    pub fn number(self) -> u8 {
        match self {
            Self::Dg1 => 1,
            Self::Dg2 => 2,
            Self::Dg11 => 11,
            Self::Dg14 => 14,
            Self::Dg15 => 15,
        }
    }

    /// The file's outer tag (ICAO 9303-10 §4.6).
    pub fn tag(self) -> u8 {
        match self {
            Self::Dg1 => 0x61,
            Self::Dg2 => 0x75,
            Self::Dg11 => 0x6B,
            Self::Dg14 => 0x6E,
            Self::Dg15 => 0x6F,
        }
    }

    /// The field's name in the API body (`dg1`, …).
    pub fn field(self) -> &'static str {
        match self {
            Self::Dg1 => "dg1",
            Self::Dg2 => "dg2",
            Self::Dg11 => "dg11",
            Self::Dg14 => "dg14",
            Self::Dg15 => "dg15",
        }
    }

    fn max_len(self) -> usize {
        match self {
            Self::Dg1 => MAX_DG1,
            Self::Dg2 => MAX_DG2,
            Self::Dg11 | Self::Dg14 | Self::Dg15 => MAX_SMALL_DG,
        }
    }
}

impl fmt::Display for DataGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DG{}", self.number())
    }
}

/// The tag of EF.SOD (ICAO 9303-10 §4.6.2).
pub const SOD_TAG: u8 = 0x77;

/// The chip's answer to an active-authentication challenge, as sent.
#[derive(Clone, PartialEq, Eq)]
pub struct ActiveAuthenticationAnswer {
    pub challenge: Vec<u8>,
    pub signature: Vec<u8>,
}

impl fmt::Debug for ActiveAuthenticationAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActiveAuthenticationAnswer")
            .field("challenge_len", &self.challenge.len())
            .field("signature_len", &self.signature.len())
            .finish()
    }
}

/// The raw files as received (base64 already decoded), before any check.
#[derive(Default, Clone)]
pub struct ChipFiles {
    pub dg1: Vec<u8>,
    pub dg2: Vec<u8>,
    pub dg11: Option<Vec<u8>>,
    pub dg14: Option<Vec<u8>>,
    pub dg15: Option<Vec<u8>>,
    pub sod: Vec<u8>,
    pub active_authentication: Option<ActiveAuthenticationAnswer>,
}

impl fmt::Debug for ChipFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Personal data: sizes only.
        f.debug_struct("ChipFiles")
            .field("dg1_len", &self.dg1.len())
            .field("dg2_len", &self.dg2.len())
            .field("sod_len", &self.sod.len())
            .finish_non_exhaustive()
    }
}

/// Why files were refused before any cryptography; `field` is the API body's name for the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChipEvidenceError {
    #[error("{field} must not be empty")]
    Empty { field: &'static str },
    #[error("{field} must be at most {max} bytes")]
    TooLarge { field: &'static str, max: usize },
    #[error("{field} must start with tag 0x{expected:02X}")]
    WrongTag { field: &'static str, expected: u8 },
    #[error("{field} must be exactly one TLV whose length matches its bytes")]
    BadLength { field: &'static str },
    #[error("activeAuthentication.challenge must be exactly 8 bytes")]
    ChallengeLength,
    #[error("activeAuthentication.signature must be 1 to 1024 bytes")]
    SignatureLength,
}

/// An active-authentication answer whose challenge is 8 bytes and whose signature is bounded.
#[derive(Clone, PartialEq, Eq)]
pub struct AaAnswer {
    challenge: [u8; CHALLENGE_LEN],
    signature: Vec<u8>,
}

impl AaAnswer {
    pub fn challenge(&self) -> &[u8; CHALLENGE_LEN] {
        &self.challenge
    }

    pub fn signature(&self) -> &[u8] {
        &self.signature
    }
}

impl fmt::Debug for AaAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AaAnswer")
            .field("signature_len", &self.signature.len())
            .finish_non_exhaustive()
    }
}

/// The evidence of one chip read: DG1, DG2 and the SOD always; DG11, DG14, DG15 and the AA
/// answer when the chip has them. Each file is one BER-TLV with its ICAO tag whose length covers
/// exactly the bytes given, within the size bounds of this module.
#[derive(Clone)]
pub struct ChipEvidence {
    dg1: Vec<u8>,
    dg2: Vec<u8>,
    dg11: Option<Vec<u8>>,
    dg14: Option<Vec<u8>>,
    dg15: Option<Vec<u8>>,
    sod: Vec<u8>,
    active_authentication: Option<AaAnswer>,
}

impl fmt::Debug for ChipEvidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChipEvidence")
            .field("data_groups", &self.present().collect::<Vec<_>>())
            .field("sod_len", &self.sod.len())
            .field(
                "active_authentication",
                &self.active_authentication.is_some(),
            )
            .finish()
    }
}

impl ChipEvidence {
    pub fn new(files: ChipFiles) -> Result<Self, ChipEvidenceError> {
        let data_group = |group: DataGroup, bytes: Vec<u8>| {
            check_tlv(group.field(), &bytes, group.tag(), group.max_len()).map(|()| bytes)
        };
        let optional = |group: DataGroup, bytes: Option<Vec<u8>>| {
            bytes.map(|bytes| data_group(group, bytes)).transpose()
        };
        check_tlv("sod", &files.sod, SOD_TAG, MAX_SOD)?;
        let active_authentication = files
            .active_authentication
            .map(|answer| {
                let challenge = <[u8; CHALLENGE_LEN]>::try_from(answer.challenge.as_slice())
                    .map_err(|_| ChipEvidenceError::ChallengeLength)?;
                if answer.signature.is_empty() || answer.signature.len() > MAX_AA_SIGNATURE {
                    return Err(ChipEvidenceError::SignatureLength);
                }
                Ok(AaAnswer {
                    challenge,
                    signature: answer.signature,
                })
            })
            .transpose()?;
        Ok(Self {
            dg1: data_group(DataGroup::Dg1, files.dg1)?,
            dg2: data_group(DataGroup::Dg2, files.dg2)?,
            dg11: optional(DataGroup::Dg11, files.dg11)?,
            dg14: optional(DataGroup::Dg14, files.dg14)?,
            dg15: optional(DataGroup::Dg15, files.dg15)?,
            sod: files.sod,
            active_authentication,
        })
    }

    /// The file's whole TLV, tag included, when the chip sent it.
    pub fn data_group(&self, group: DataGroup) -> Option<&[u8]> {
        match group {
            DataGroup::Dg1 => Some(&self.dg1),
            DataGroup::Dg2 => Some(&self.dg2),
            DataGroup::Dg11 => self.dg11.as_deref(),
            DataGroup::Dg14 => self.dg14.as_deref(),
            DataGroup::Dg15 => self.dg15.as_deref(),
        }
    }

    /// The data groups sent, in number order.
    pub fn present(&self) -> impl Iterator<Item = DataGroup> + '_ {
        DataGroup::ALL
            .into_iter()
            .filter(|group| self.data_group(*group).is_some())
    }

    /// EF.SOD's whole TLV (tag 0x77 included).
    pub fn sod(&self) -> &[u8] {
        &self.sod
    }

    pub fn active_authentication(&self) -> Option<&AaAnswer> {
        self.active_authentication.as_ref()
    }
}

/// One BER-TLV with a one-byte `tag` and a definite length (at most four length bytes) whose
/// value ends exactly at the end of `bytes`.
fn check_tlv(
    field: &'static str,
    bytes: &[u8],
    tag: u8,
    max: usize,
) -> Result<(), ChipEvidenceError> {
    if bytes.is_empty() {
        return Err(ChipEvidenceError::Empty { field });
    }
    if bytes.len() > max {
        return Err(ChipEvidenceError::TooLarge { field, max });
    }
    if bytes[0] != tag {
        return Err(ChipEvidenceError::WrongTag {
            field,
            expected: tag,
        });
    }
    let bad = ChipEvidenceError::BadLength { field };
    let first = *bytes.get(1).ok_or(bad.clone())?;
    let (length, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let count = usize::from(first & 0x7F);
        if count == 0 || count > 4 {
            return Err(bad);
        }
        let digits = bytes.get(2..2 + count).ok_or(bad.clone())?;
        let length = digits
            .iter()
            .fold(0usize, |acc, &digit| (acc << 8) | usize::from(digit));
        (length, 2 + count)
    };
    if header + length != bytes.len() {
        return Err(bad);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlv(tag: u8, len: usize) -> Vec<u8> {
        let mut out = vec![tag];
        if len < 0x80 {
            out.push(len as u8);
        } else if len < 0x100 {
            out.extend([0x81, len as u8]);
        } else {
            out.extend([0x82, (len >> 8) as u8, len as u8]);
        }
        out.resize(out.len() + len, 0);
        out
    }

    fn files() -> ChipFiles {
        ChipFiles {
            dg1: tlv(0x61, 93),
            dg2: tlv(0x75, 20_000),
            sod: tlv(0x77, 1_500),
            ..ChipFiles::default()
        }
    }

    #[test]
    fn well_formed_files_are_accepted_and_listed_in_number_order() {
        let mut files = files();
        files.dg15 = Some(tlv(0x6F, 300));
        files.dg11 = Some(tlv(0x6B, 40));
        let evidence = ChipEvidence::new(files).unwrap();
        let present: Vec<_> = evidence.present().collect();
        assert_eq!(
            present,
            [
                DataGroup::Dg1,
                DataGroup::Dg2,
                DataGroup::Dg11,
                DataGroup::Dg15
            ]
        );
    }

    #[test]
    fn a_file_with_another_files_tag_is_refused() {
        let mut swapped = files();
        swapped.dg1 = tlv(0x75, 93);
        assert_eq!(
            ChipEvidence::new(swapped).unwrap_err(),
            ChipEvidenceError::WrongTag {
                field: "dg1",
                expected: 0x61
            }
        );
    }

    #[test]
    fn trailing_bytes_or_a_length_past_the_end_are_refused() {
        let mut trailing = files();
        trailing.sod.push(0);
        assert_eq!(
            ChipEvidence::new(trailing).unwrap_err(),
            ChipEvidenceError::BadLength { field: "sod" }
        );
        let mut short = files();
        short.dg1.pop();
        assert!(ChipEvidence::new(short).is_err());
        let mut huge_claim = files();
        huge_claim.sod = vec![0x77, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x30];
        assert!(ChipEvidence::new(huge_claim).is_err());
    }

    #[test]
    fn sizes_are_bounded_before_anything_else() {
        let mut big = files();
        big.dg2 = vec![0x75; MAX_DG2 + 1];
        assert_eq!(
            ChipEvidence::new(big).unwrap_err(),
            ChipEvidenceError::TooLarge {
                field: "dg2",
                max: MAX_DG2
            }
        );
        let mut big_sod = files();
        big_sod.sod = tlv(0x77, MAX_SOD);
        assert!(matches!(
            ChipEvidence::new(big_sod).unwrap_err(),
            ChipEvidenceError::TooLarge { field: "sod", .. }
        ));
    }

    #[test]
    fn the_challenge_is_eight_bytes_and_the_signature_bounded() {
        let answer = |challenge: usize, signature: usize| {
            let mut files = files();
            files.active_authentication = Some(ActiveAuthenticationAnswer {
                challenge: vec![1; challenge],
                signature: vec![2; signature],
            });
            ChipEvidence::new(files)
        };
        assert!(answer(8, 256).is_ok());
        assert_eq!(
            answer(7, 256).unwrap_err(),
            ChipEvidenceError::ChallengeLength
        );
        assert_eq!(
            answer(8, 0).unwrap_err(),
            ChipEvidenceError::SignatureLength
        );
        assert_eq!(
            answer(8, MAX_AA_SIGNATURE + 1).unwrap_err(),
            ChipEvidenceError::SignatureLength
        );
    }
}
