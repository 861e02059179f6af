//! The content of the data groups (ICAO 9303-10 §4.7): DG1's MRZ, DG2's portrait in its
//! ISO/IEC 19794-5 record, DG11's personal details, DG14's security infos and DG15's key.

use der::Decode;
use der::asn1::ObjectIdentifier;
use idconsent_verification::chip::{DataGroup, PersonalDetails, Portrait, PortraitFormat};
use idconsent_verification::mrz::{MrzData, parse_mrz};

use crate::algorithms::HashAlgorithm;
use crate::oids;
use crate::tlv;

fn outer(bytes: &[u8], group: DataGroup) -> Result<&[u8], String> {
    tlv::single(bytes, u32::from(group.tag()))
        .map(|tlv| tlv.value)
        .map_err(|error| error.to_string())
}

/// DG1: tag 0x5F1F holds the MRZ as one run of characters (88 for TD3, 72 for TD2, 90 for TD1).
pub(crate) fn mrz(dg1: &[u8], reference_year: i32) -> Result<MrzData, String> {
    let value = outer(dg1, DataGroup::Dg1)?;
    let text = tlv::require(value, 0x5F1F)
        .map_err(|e| e.to_string())?
        .value;
    if !text
        .iter()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'<')
    {
        return Err("the MRZ has characters outside its alphabet".to_owned());
    }
    let width = match text.len() {
        88 => 44,
        72 => 36,
        90 => 30,
        other => return Err(format!("an MRZ of {other} characters")),
    };
    let lines: Vec<&str> = text
        .chunks(width)
        .map(|line| std::str::from_utf8(line).unwrap_or_default())
        .collect();
    parse_mrz(&lines.join("\n"), reference_year).map_err(|error| error.to_string())
}

/// DG2: the first biometric data block of the first biometric information template, an
/// ISO/IEC 19794-5 facial record ("FAC\0"). ISO/IEC 39794-5 records are not read.
pub(crate) fn portrait(dg2: &[u8]) -> Result<Portrait, String> {
    let text = |error: tlv::TlvError| error.to_string();
    let group = tlv::require(outer(dg2, DataGroup::Dg2)?, 0x7F61).map_err(text)?;
    let template = tlv::require(group.value, 0x7F60).map_err(text)?;
    let block = match tlv::find(template.value, 0x5F2E).map_err(text)? {
        Some(block) => block,
        None => tlv::require(template.value, 0x7F2E).map_err(text)?,
    };
    facial_record(block.value)
}

fn be(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .fold(0usize, |acc, byte| (acc << 8) | usize::from(*byte))
}

/// ISO/IEC 19794-5:2005 §5.4–5.7: general header (14 bytes), facial information (20),
/// feature points (8 each), image information (12), then the image.
fn facial_record(record: &[u8]) -> Result<Portrait, String> {
    let short = || "the facial record is truncated".to_owned();
    if record.get(..4) != Some(b"FAC\0") {
        return Err("not an ISO/IEC 19794-5 facial record (ISO/IEC 39794-5 is not read)".into());
    }
    let header = record.get(..14).ok_or_else(short)?;
    if be(&header[12..14]) == 0 {
        return Err("the facial record holds no image".to_owned());
    }
    let face = record.get(14..34).ok_or_else(short)?;
    let face_length = be(&face[0..4]);
    let feature_points = be(&face[4..6]);
    let info_start = 34 + feature_points * 8;
    let info = record.get(info_start..info_start + 12).ok_or_else(short)?;
    let image_start = info_start + 12;
    let image_length = face_length
        .checked_sub(20 + feature_points * 8 + 12)
        .ok_or_else(|| "the facial record's length is too small".to_owned())?;
    let image = record
        .get(image_start..image_start + image_length)
        .ok_or_else(short)?;
    let format = match info[1] {
        0 if image.starts_with(&[0xFF, 0xD8, 0xFF]) => PortraitFormat::Jpeg,
        1 if image.starts_with(&[0xFF, 0x4F, 0xFF, 0x51])
            || image.starts_with(&[0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20]) =>
        {
            PortraitFormat::Jpeg2000
        }
        kind => return Err(format!("image data type {kind} does not match the image")),
    };
    let width = u16::from_be_bytes([info[2], info[3]]);
    let height = u16::from_be_bytes([info[4], info[5]]);
    Ok(Portrait {
        format,
        width,
        height,
        image: image.to_vec(),
    })
}

/// Text of a DG11 field: `<` separates words (and, in names, `<<` surname from given names).
fn words(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .split('<')
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// DG11 (ICAO 9303-10 §4.7.11): full name 5F0E, personal number 5F10, full date of birth
/// 5F2B, place of birth 5F11, address 5F42.
pub(crate) fn personal_details(dg11: &[u8]) -> Result<PersonalDetails, String> {
    let value = outer(dg11, DataGroup::Dg11)?;
    let field = |tag: u32| -> Result<Option<&[u8]>, String> {
        tlv::find(value, tag)
            .map(|found| found.map(|tlv| tlv.value))
            .map_err(|error| error.to_string())
    };
    let full_name = field(0x5F0E)?.map(|name| {
        let text = String::from_utf8_lossy(name);
        match text.split_once("<<") {
            Some((surname, given)) => (words(surname.as_bytes()), words(given.as_bytes())),
            None => (words(name), String::new()),
        }
    });
    let full_date_of_birth = field(0x5F2B)?.map(|date| {
        // Stored as 8 ASCII digits or 4 BCD bytes.
        if date.len() == 4 {
            date.iter().map(|byte| format!("{byte:02x}")).collect()
        } else {
            String::from_utf8_lossy(date).into_owned()
        }
    });
    Ok(PersonalDetails {
        full_name,
        personal_number: field(0x5F10)?.map(words),
        full_date_of_birth,
        place_of_birth: field(0x5F11)?.map(words),
        address: field(0x5F42)?.map(|address| {
            String::from_utf8_lossy(address)
                .split('<')
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect()
        }),
    })
}

/// What DG14's `SecurityInfos` say about the protocols this service cares about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SecurityInfos {
    /// The hash of ECDSA active authentication (`ActiveAuthenticationInfo`).
    pub active_authentication_hash: Option<HashAlgorithm>,
    /// Whether the chip offers chip authentication.
    pub chip_authentication: bool,
}

/// DG14: `SecurityInfos ::= SET OF SecurityInfo`, each `SEQUENCE { protocol OBJECT
/// IDENTIFIER, requiredData ANY, optionalData ANY OPTIONAL }`.
pub(crate) fn security_infos(dg14: &[u8]) -> Result<SecurityInfos, String> {
    let text = |error: tlv::TlvError| error.to_string();
    let set = tlv::single(outer(dg14, DataGroup::Dg14)?, 0x31).map_err(text)?;
    let mut infos = SecurityInfos::default();
    for info in tlv::children(set.value) {
        let info = info.map_err(text)?;
        let mut parts = tlv::children(info.value);
        let Some(Ok(protocol)) = parts.next() else {
            return Err("a security info without a protocol".to_owned());
        };
        let protocol = ObjectIdentifier::from_der(protocol.raw).map_err(|e| e.to_string())?;
        let text_oid = protocol.to_string();
        if text_oid.starts_with(oids::CHIP_AUTHENTICATION_ARC)
            || text_oid.starts_with(oids::CHIP_AUTHENTICATION_KEY_ARC)
        {
            infos.chip_authentication = true;
        }
        if protocol == oids::ACTIVE_AUTHENTICATION {
            let _version = parts.next();
            if let Some(Ok(algorithm)) = parts.next() {
                let algorithm =
                    ObjectIdentifier::from_der(algorithm.raw).map_err(|e| e.to_string())?;
                infos.active_authentication_hash = Some(aa_hash(&algorithm)?);
            }
        }
    }
    Ok(infos)
}

/// The hash of an `ActiveAuthenticationInfo`'s signature algorithm (BSI TR-03111 plain ECDSA
/// or X9.62 ECDSA identifiers).
fn aa_hash(algorithm: &ObjectIdentifier) -> Result<HashAlgorithm, String> {
    use HashAlgorithm::*;
    [
        (oids::ECDSA_PLAIN_SHA1, Sha1),
        (oids::ECDSA_PLAIN_SHA224, Sha224),
        (oids::ECDSA_PLAIN_SHA256, Sha256),
        (oids::ECDSA_PLAIN_SHA384, Sha384),
        (oids::ECDSA_PLAIN_SHA512, Sha512),
        (oids::ECDSA_WITH_SHA1, Sha1),
        (oids::ECDSA_WITH_SHA224, Sha224),
        (oids::ECDSA_WITH_SHA256, Sha256),
        (oids::ECDSA_WITH_SHA384, Sha384),
        (oids::ECDSA_WITH_SHA512, Sha512),
    ]
    .into_iter()
    .find_map(|(known, hash)| (known == *algorithm).then_some(hash))
    .ok_or_else(|| format!("active authentication algorithm {algorithm}"))
}

/// DG15: the SubjectPublicKeyInfo of the active-authentication key.
pub(crate) fn aa_key_der(dg15: &[u8]) -> Result<&[u8], String> {
    let value = outer(dg15, DataGroup::Dg15)?;
    tlv::single(value, 0x30)
        .map(|spki| spki.raw)
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 19794-5 record around `image` with image data type `kind`.
    fn record(kind: u8, image: &[u8]) -> Vec<u8> {
        let facial = (20 + 12 + image.len()) as u32;
        let mut out = b"FAC\x00010\x00".to_vec();
        out.extend((14 + facial).to_be_bytes());
        out.extend(1u16.to_be_bytes());
        out.extend(facial.to_be_bytes());
        out.extend([0u8; 16]);
        out.extend([1, kind, 0x01, 0xE0, 0x02, 0x80, 1, 2, 0, 0, 0, 0]);
        out.extend_from_slice(image);
        out
    }

    #[test]
    fn jpeg_and_jpeg_2000_portraits_are_told_apart_by_type_and_magic() {
        let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3];
        let portrait = facial_record(&record(0, &jpeg)).unwrap();
        assert_eq!(portrait.format, PortraitFormat::Jpeg);
        assert_eq!((portrait.width, portrait.height), (480, 640));
        assert_eq!(portrait.image, jpeg);

        let codestream = [0xFF, 0x4F, 0xFF, 0x51, 9, 9];
        assert_eq!(
            facial_record(&record(1, &codestream)).unwrap().format,
            PortraitFormat::Jpeg2000
        );
        let jp2 = [0, 0, 0, 0x0C, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A];
        assert_eq!(
            facial_record(&record(1, &jp2)).unwrap().format,
            PortraitFormat::Jpeg2000
        );
        // A type that does not match the bytes, a record that is not 19794-5, a truncated one.
        assert!(facial_record(&record(1, &jpeg)).is_err());
        assert!(facial_record(b"\x30\x82\x01\x00 an ISO/IEC 39794-5 record").is_err());
        let full = record(0, &jpeg);
        assert!(facial_record(&full[..full.len() - 1]).is_err());
    }

    #[test]
    fn dg1_of_each_layout_is_read() {
        use idconsent_verification::mrz::{MrzFormat, specimen_td1, specimen_td3};
        let dg1 = |lines: &[String]| {
            crate::tlv::encode(0x61, &crate::tlv::encode(0x5F1F, lines.concat().as_bytes()))
        };
        assert_eq!(
            mrz(&dg1(&specimen_td3()), 2026).unwrap().format,
            MrzFormat::Td3
        );
        let td1 = mrz(&dg1(&specimen_td1()), 2026).unwrap();
        assert_eq!(td1.format, MrzFormat::Td1);
        assert_eq!(td1.document_number, "D23145890");
        assert!(mrz(&dg1(&["P<UTO".to_owned()]), 2026).is_err());
        assert!(
            mrz(
                &dg1(&[specimen_td3()[0].to_lowercase(), specimen_td3()[1].clone()]),
                2026
            )
            .is_err()
        );
    }
}
