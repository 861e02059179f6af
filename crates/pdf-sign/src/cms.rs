//! CMS SignedData, detached, as PAdES B-B wants it (ETSI EN 319 142-1): signed attributes
//! contentType, messageDigest and signing-certificate-v2; no signing-time (the signature
//! dictionary's `/M` carries it). For B-T the signer gains the unsigned attribute
//! signatureTimeStampToken: an RFC 3161 token over the SHA-256 of its signature value.

use cms::cert::{CertificateChoices, IssuerAndSerialNumber};
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{
    CertificateSet, EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo, SignerInfos,
};
use der::asn1::{ObjectIdentifier, OctetString, SetOfVec};
use der::{Any, Decode, Encode};
use sha2::{Digest, Sha256};
use spki::AlgorithmIdentifierOwned;
use x509_cert::attr::Attribute;

use crate::identity::SigningIdentity;

const ID_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.1");
const ID_SIGNED_DATA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.7.2");
const SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const CONTENT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.3");
const MESSAGE_DIGEST: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.4");
const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const SIGNING_CERTIFICATE_V2: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.47");
/// id-aa-signatureTimeStampToken (RFC 3161 appendix A).
const SIGNATURE_TIME_STAMP_TOKEN: ObjectIdentifier =
    ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.14");

#[derive(Debug, thiserror::Error)]
pub enum CmsError {
    #[error("CMS encoding failed: {0}")]
    Der(#[from] der::Error),
    #[error("signing failed")]
    Sign,
}

fn attribute(oid: ObjectIdentifier, value: Any) -> Result<Attribute, CmsError> {
    let mut values = SetOfVec::new();
    values.insert(value)?;
    Ok(Attribute { oid, values })
}

/// A DER TLV with a short or long length.
fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let length = content.len();
    if length < 0x80 {
        out.push(length as u8);
    } else {
        let bytes: Vec<u8> = length
            .to_be_bytes()
            .into_iter()
            .skip_while(|byte| *byte == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// `SigningCertificateV2 ::= SEQUENCE { certs SEQUENCE OF ESSCertIDv2 }`, one ESSCertIDv2
/// with the default hash (SHA-256) left out, as DER requires.
fn signing_certificate_v2(certificate_der: &[u8]) -> Vec<u8> {
    let hash = Sha256::digest(certificate_der);
    let ess_cert_id = tlv(0x30, &tlv(0x04, &hash));
    tlv(0x30, &tlv(0x30, &ess_cert_id))
}

/// What a time-stamping authority stamps for B-T: the SHA-256 of the signature value.
pub fn signature_digest(signer: &SignerInfo) -> [u8; 32] {
    Sha256::digest(signer.signature.as_bytes()).into()
}

/// Adds the RFC 3161 `token` (a TimeStampToken's DER) as the signer's
/// signatureTimeStampToken.
pub fn add_timestamp(signer: &mut SignerInfo, token: &[u8]) -> Result<(), CmsError> {
    let mut attributes = SetOfVec::new();
    attributes.insert(attribute(
        SIGNATURE_TIME_STAMP_TOKEN,
        Any::from_der(token)?,
    )?)?;
    signer.unsigned_attrs = Some(attributes);
    Ok(())
}

/// The signer over content whose SHA-256 is `digest`.
pub fn signer_info(identity: &SigningIdentity, digest: &[u8; 32]) -> Result<SignerInfo, CmsError> {
    let sha256 = AlgorithmIdentifierOwned {
        oid: SHA256,
        parameters: None,
    };
    let mut signed_attrs = SetOfVec::new();
    signed_attrs.insert(attribute(CONTENT_TYPE, Any::encode_from(&ID_DATA)?)?)?;
    signed_attrs.insert(attribute(
        MESSAGE_DIGEST,
        Any::encode_from(&OctetString::new(digest.to_vec())?)?,
    )?)?;
    signed_attrs.insert(attribute(
        SIGNING_CERTIFICATE_V2,
        Any::from_der(&signing_certificate_v2(identity.certificate_der()))?,
    )?)?;
    // The signature is over the attributes' DER as a SET OF (RFC 5652 §5.4).
    let (algorithm, signature) = identity
        .sign(&signed_attrs.to_der()?)
        .map_err(|_| CmsError::Sign)?;
    let certificate = identity.certificate();
    let tbs = certificate.tbs_certificate();
    Ok(SignerInfo {
        version: CmsVersion::V1,
        sid: SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
            issuer: tbs.issuer().clone(),
            serial_number: tbs.serial_number().clone(),
        }),
        digest_alg: sha256.clone(),
        signed_attrs: Some(signed_attrs),
        signature_algorithm: AlgorithmIdentifierOwned {
            oid: algorithm,
            // RSA PKCS#1 v1.5 identifiers carry NULL parameters; ECDSA ones none.
            parameters: (algorithm == SHA256_WITH_RSA).then(Any::null),
        },
        signature: OctetString::new(signature)?,
        unsigned_attrs: None,
    })
}

/// The DER ContentInfo of the detached SignedData of `signer` (made by `identity`).
pub fn content_info(identity: &SigningIdentity, signer: SignerInfo) -> Result<Vec<u8>, CmsError> {
    let sha256 = AlgorithmIdentifierOwned {
        oid: SHA256,
        parameters: None,
    };
    let certificate = identity.certificate();
    let mut digest_algorithms = SetOfVec::new();
    digest_algorithms.insert(sha256)?;
    let signed = SignedData {
        version: CmsVersion::V1,
        digest_algorithms,
        encap_content_info: EncapsulatedContentInfo {
            econtent_type: ID_DATA,
            econtent: None,
        },
        certificates: Some(CertificateSet::try_from(vec![
            CertificateChoices::Certificate(certificate.clone()),
        ])?),
        crls: None,
        signer_infos: SignerInfos::try_from(vec![signer])?,
    };
    Ok(ContentInfo {
        content_type: ID_SIGNED_DATA,
        content: Any::encode_from(&signed)?,
    }
    .to_der()?)
}
