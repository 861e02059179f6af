//! CMS SignedData (RFC 5652) as ICAO uses it twice: the SOD (content: the LDS security object)
//! and the CSCA master list (content: `CscaMasterList`). Both carry their signer's certificate
//! and must have signed attributes (content type and message digest).

use cms::content_info::ContentInfo;
use cms::signed_data::{SignedData, SignerIdentifier, SignerInfo};
use der::asn1::{ObjectIdentifier, OctetString};
use der::{Decode, Encode};

use crate::algorithms::{HashAlgorithm, Scheme, SignatureError};
use crate::certs::Cert;
use crate::oids;

/// A SignedData with one signer whose certificate it carries.
#[derive(Debug)]
pub(crate) struct Signed {
    /// The eContent's bytes (the OCTET STRING's value).
    pub content: Vec<u8>,
    pub signer: Cert,
    signer_info: SignerInfo,
    content_type: ObjectIdentifier,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CmsError {
    Structure(String),
    Unsupported(String),
    SignatureInvalid,
}

impl From<SignatureError> for CmsError {
    fn from(error: SignatureError) -> Self {
        match error {
            SignatureError::Invalid => Self::SignatureInvalid,
            SignatureError::Unsupported(what) => Self::Unsupported(what),
            SignatureError::BadKey(what) => Self::Structure(what),
        }
    }
}

fn structure(what: impl std::fmt::Display) -> CmsError {
    CmsError::Structure(what.to_string())
}

/// Parses a DER ContentInfo holding a SignedData whose content is of type `expected`.
pub(crate) fn parse(content_info: &[u8], expected: ObjectIdentifier) -> Result<Signed, CmsError> {
    let info = ContentInfo::from_der(content_info).map_err(structure)?;
    if info.content_type != oids::SIGNED_DATA {
        return Err(structure("not a CMS SignedData"));
    }
    let signed: SignedData = info.content.decode_as().map_err(structure)?;
    let encapsulated = &signed.encap_content_info;
    if encapsulated.econtent_type != expected {
        return Err(structure(format!(
            "content type {} instead of {expected}",
            encapsulated.econtent_type
        )));
    }
    let content: OctetString = encapsulated
        .econtent
        .as_ref()
        .ok_or_else(|| structure("no encapsulated content"))?
        .decode_as()
        .map_err(structure)?;
    let mut signers = signed.signer_infos.0.iter();
    let signer_info = match (signers.next(), signers.next()) {
        (Some(only), None) => only.clone(),
        _ => return Err(structure("not exactly one signer")),
    };
    let certificates = signed
        .certificates
        .as_ref()
        .ok_or_else(|| structure("no signer certificate in the SignedData"))?;
    let certificate = certificates
        .0
        .iter()
        .filter_map(|choice| match choice {
            cms::cert::CertificateChoices::Certificate(certificate) => Some(certificate),
            _ => None,
        })
        .find(|certificate| names(&signer_info.sid, certificate))
        .ok_or_else(|| structure("the signer's certificate is not in the SignedData"))?;
    let signer = Cert::new(certificate.clone())?;
    Ok(Signed {
        content: content.as_bytes().to_vec(),
        signer,
        signer_info,
        content_type: expected,
    })
}

fn names(sid: &SignerIdentifier, certificate: &x509_cert::Certificate) -> bool {
    let tbs = certificate.tbs_certificate();
    match sid {
        SignerIdentifier::IssuerAndSerialNumber(id) => {
            &id.issuer == tbs.issuer() && &id.serial_number == tbs.serial_number()
        }
        SignerIdentifier::SubjectKeyIdentifier(id) => Cert::new(certificate.clone())
            .ok()
            .and_then(|cert| cert.subject_key_id)
            .is_some_and(|key_id| key_id == id.0.as_bytes()),
    }
}

impl Signed {
    /// Checks the signed attributes against the content and the signature with the signer's
    /// certificate.
    pub(crate) fn verify(&self) -> Result<(), CmsError> {
        let info = &self.signer_info;
        let digest_algorithm = HashAlgorithm::from_oid(&info.digest_alg.oid).ok_or_else(|| {
            CmsError::Unsupported(format!("digest algorithm {}", info.digest_alg.oid))
        })?;
        let attributes = info
            .signed_attrs
            .as_ref()
            .ok_or_else(|| structure("no signed attributes"))?;
        let single = |oid: ObjectIdentifier| -> Result<&der::Any, CmsError> {
            let mut matching = attributes.iter().filter(|attribute| attribute.oid == oid);
            match (matching.next(), matching.next()) {
                (Some(attribute), None) if attribute.values.len() == 1 => attribute
                    .values
                    .iter()
                    .next()
                    .ok_or_else(|| structure("empty attribute")),
                _ => Err(structure(format!("not exactly one {oid} attribute"))),
            }
        };
        let content_type: ObjectIdentifier =
            single(oids::CONTENT_TYPE)?.decode_as().map_err(structure)?;
        if content_type != self.content_type {
            return Err(CmsError::SignatureInvalid);
        }
        let message_digest: OctetString = single(oids::MESSAGE_DIGEST)?
            .decode_as()
            .map_err(structure)?;
        if message_digest.as_bytes() != digest_algorithm.digest(&[&self.content]).as_slice() {
            return Err(CmsError::SignatureInvalid);
        }
        let scheme = Scheme::of(&info.signature_algorithm, Some(digest_algorithm))?;
        // The signature covers the attributes' DER with the SET OF tag (RFC 5652 §5.4).
        let signed_bytes = attributes.to_der().map_err(structure)?;
        scheme.verify(&self.signer.key, &signed_bytes, info.signature.as_bytes())?;
        Ok(())
    }
}
