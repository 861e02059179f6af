//! What a token must prove before it goes into a signature: that it answers our request (the
//! imprint and our nonce), that it is the authority's (a valid CMS signature by a certificate
//! the operator trusts, or one such a certificate issued), and that it is a time stamp (the
//! signer may stamp time: extKeyUsage timeStamping).

use cms::cert::CertificateChoices;
use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier};
use der::asn1::{ObjectIdentifier, OctetString, Uint};
use der::{Decode, Encode};
use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use sha2::{Digest, Sha256, Sha384, Sha512};
use x509_cert::Certificate;
use x509_cert::ext::pkix::ExtendedKeyUsage;

use crate::asn1::{
    ID_CONTENT_TYPE, ID_CT_TST_INFO, ID_KP_TIME_STAMPING, ID_MESSAGE_DIGEST, ID_SIGNED_DATA,
    SHA256, SHA384, SHA512, TstInfo,
};

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const SHA384_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.12");
const SHA512_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.13");
const ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_WITH_SHA384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");

/// What we asked for.
#[derive(Debug)]
pub(crate) struct Expected<'a> {
    pub digest: &'a [u8; 32],
    pub nonce: &'a Uint,
    pub policy: Option<&'a ObjectIdentifier>,
}

/// The token's `genTime` as written when every check passed; why not otherwise.
pub(crate) fn check_token(
    token: &[u8],
    expected: &Expected<'_>,
    trusted: &[Certificate],
) -> Result<String, String> {
    let info = ContentInfo::from_der(token).map_err(|e| format!("token: {e}"))?;
    if info.content_type != ID_SIGNED_DATA {
        return Err("the token is not a CMS SignedData".into());
    }
    let signed: SignedData = info
        .content
        .decode_as()
        .map_err(|e| format!("token SignedData: {e}"))?;
    if signed.encap_content_info.econtent_type != ID_CT_TST_INFO {
        return Err("the token does not encapsulate a TSTInfo".into());
    }
    let content: OctetString = signed
        .encap_content_info
        .econtent
        .as_ref()
        .ok_or("the token has no TSTInfo")?
        .decode_as()
        .map_err(|e| format!("TSTInfo octets: {e}"))?;
    let tst = TstInfo::from_der(content.as_bytes()).map_err(|e| format!("TSTInfo: {e}"))?;
    if tst.message_imprint.hash_algorithm.oid != SHA256
        || tst.message_imprint.hashed_message.as_bytes() != expected.digest
    {
        return Err("the token stamps another message".into());
    }
    if tst.nonce.as_ref() != Some(expected.nonce) {
        return Err("the token does not carry our nonce (a replayed answer?)".into());
    }
    if let Some(policy) = expected.policy
        && tst.policy != *policy
    {
        return Err(format!(
            "the token is under policy {}, not {policy}",
            tst.policy
        ));
    }

    let mut signers = signed.signer_infos.0.iter();
    let (Some(signer), None) = (signers.next(), signers.next()) else {
        return Err("the token must have exactly one signer".into());
    };
    let attributes = signer
        .signed_attrs
        .as_ref()
        .ok_or("the token's signer has no signed attributes")?;
    let attribute = |oid: ObjectIdentifier| {
        attributes
            .iter()
            .find(|attribute| attribute.oid == oid)
            .and_then(|attribute| attribute.values.iter().next())
    };
    let content_type: ObjectIdentifier = attribute(ID_CONTENT_TYPE)
        .ok_or("no contentType attribute")?
        .decode_as()
        .map_err(|e| format!("contentType: {e}"))?;
    if content_type != ID_CT_TST_INFO {
        return Err("the signed contentType is not TSTInfo".into());
    }
    let message_digest: OctetString = attribute(ID_MESSAGE_DIGEST)
        .ok_or("no messageDigest attribute")?
        .decode_as()
        .map_err(|e| format!("messageDigest: {e}"))?;
    let computed = digest(&signer.digest_alg.oid, content.as_bytes())?;
    if message_digest.as_bytes() != computed.as_slice() {
        return Err("the TSTInfo does not match the signed digest".into());
    }

    let certificate = signer_certificate(&signed, &signer.sid, trusted)?;
    trusted_issuer(&certificate, trusted)?;
    stamps_time(&certificate)?;
    let signed_bytes = attributes.to_der().map_err(|e| e.to_string())?;
    verify(
        &certificate,
        &signer.signature_algorithm.oid,
        &signer.digest_alg.oid,
        &signed_bytes,
        signer.signature.as_bytes(),
    )
    .map_err(|reason| format!("the token's signature: {reason}"))?;
    Ok(String::from_utf8_lossy(tst.gen_time.value()).into_owned())
}

fn digest(algorithm: &ObjectIdentifier, bytes: &[u8]) -> Result<Vec<u8>, String> {
    match *algorithm {
        SHA256 => Ok(Sha256::digest(bytes).to_vec()),
        SHA384 => Ok(Sha384::digest(bytes).to_vec()),
        SHA512 => Ok(Sha512::digest(bytes).to_vec()),
        other => Err(format!("unsupported digest algorithm {other}")),
    }
}

/// The certificate named by the signer identifier, from the token or the trusted set.
fn signer_certificate(
    signed: &SignedData,
    sid: &SignerIdentifier,
    trusted: &[Certificate],
) -> Result<Certificate, String> {
    let SignerIdentifier::IssuerAndSerialNumber(id) = sid else {
        return Err("the token's signer is named by key identifier, which we do not match".into());
    };
    let carried = signed
        .certificates
        .iter()
        .flat_map(|set| set.0.iter())
        .filter_map(|choice| match choice {
            CertificateChoices::Certificate(certificate) => Some(certificate),
            _ => None,
        });
    carried
        .chain(trusted.iter())
        .find(|certificate| {
            let tbs = certificate.tbs_certificate();
            tbs.issuer() == &id.issuer && tbs.serial_number() == &id.serial_number
        })
        .cloned()
        .ok_or_else(|| "the token's signing certificate is neither carried nor trusted".into())
}

/// The signer is a trusted certificate, or one a trusted certificate issued (its signature
/// checked).
fn trusted_issuer(certificate: &Certificate, trusted: &[Certificate]) -> Result<(), String> {
    if trusted.iter().any(|anchor| anchor == certificate) {
        return Ok(());
    }
    let tbs = certificate.tbs_certificate();
    let issued = trusted.iter().any(|anchor| {
        anchor.tbs_certificate().subject() == tbs.issuer()
            && tbs.to_der().is_ok_and(|tbs_der| {
                verify(
                    anchor,
                    &certificate.signature_algorithm().oid,
                    &SHA256,
                    &tbs_der,
                    certificate.signature().raw_bytes(),
                )
                .is_ok()
            })
    });
    if issued {
        Ok(())
    } else {
        Err("the token's signer is not a time-stamping authority the operator trusts".into())
    }
}

/// RFC 3161 §2.3: the TSA's certificate has extKeyUsage timeStamping.
fn stamps_time(certificate: &Certificate) -> Result<(), String> {
    let usage = certificate
        .tbs_certificate()
        .get_extension::<ExtendedKeyUsage>()
        .map_err(|e| format!("extKeyUsage: {e}"))?;
    match usage {
        Some((_, usage)) if usage.0.contains(&ID_KP_TIME_STAMPING) => Ok(()),
        _ => Err("the token's signer may not stamp time (no extKeyUsage timeStamping)".into()),
    }
}

/// `signature` over `message` by `certificate`'s key, under the signature algorithm (and the
/// digest algorithm, for a bare rsaEncryption).
fn verify(
    certificate: &Certificate,
    signature_algorithm: &ObjectIdentifier,
    digest_algorithm: &ObjectIdentifier,
    message: &[u8],
    signature: &[u8],
) -> Result<(), String> {
    let spki = certificate.tbs_certificate().subject_public_key_info();
    let curve = spki
        .algorithm
        .parameters
        .as_ref()
        .and_then(|parameters| parameters.decode_as::<ObjectIdentifier>().ok());
    let algorithm: &dyn VerificationAlgorithm = match (*signature_algorithm, curve) {
        (SHA256_WITH_RSA, _) => &signature::RSA_PKCS1_2048_8192_SHA256,
        (SHA384_WITH_RSA, _) => &signature::RSA_PKCS1_2048_8192_SHA384,
        (SHA512_WITH_RSA, _) => &signature::RSA_PKCS1_2048_8192_SHA512,
        (RSA_ENCRYPTION, _) => match *digest_algorithm {
            SHA256 => &signature::RSA_PKCS1_2048_8192_SHA256,
            SHA384 => &signature::RSA_PKCS1_2048_8192_SHA384,
            SHA512 => &signature::RSA_PKCS1_2048_8192_SHA512,
            other => return Err(format!("unsupported digest {other}")),
        },
        (ECDSA_WITH_SHA256, Some(P256)) => &signature::ECDSA_P256_SHA256_ASN1,
        (ECDSA_WITH_SHA384, Some(P256)) => &signature::ECDSA_P256_SHA384_ASN1,
        (ECDSA_WITH_SHA256, Some(P384)) => &signature::ECDSA_P384_SHA256_ASN1,
        (ECDSA_WITH_SHA384, Some(P384)) => &signature::ECDSA_P384_SHA384_ASN1,
        (other, _) => return Err(format!("unsupported signature algorithm {other}")),
    };
    UnparsedPublicKey::new(algorithm, spki.subject_public_key.raw_bytes())
        .verify(message, signature)
        .map_err(|_| "does not verify".to_string())
}
