//! What the verifier needs from an X.509 certificate: its key, its key identifiers, whether it
//! is a CA, its validity, and whether another key signed it.

use der::Encode;
use idconsent_kernel::Timestamp;
use idconsent_verification::chip::{CertificateRole, CscaAnchor, DocumentSigner, PassiveFailure};
use x509_cert::Certificate;
use x509_cert::time::Time;

use crate::algorithms::{PublicKey, Scheme, SignatureError};
use crate::oids;
use crate::tlv;

/// A certificate with what was read from it once.
#[derive(Debug, Clone)]
pub(crate) struct Cert {
    pub certificate: Certificate,
    pub key: PublicKey,
    pub subject_der: Vec<u8>,
    pub issuer_der: Vec<u8>,
    pub subject_key_id: Option<Vec<u8>>,
    pub authority_key_id: Option<Vec<u8>>,
    pub is_ca: bool,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

fn timestamp(time: &Time) -> Timestamp {
    let millis = i64::try_from(time.to_unix_duration().as_millis()).unwrap_or(i64::MAX);
    Timestamp::from_millis(millis)
}

impl Cert {
    pub(crate) fn new(certificate: Certificate) -> Result<Self, SignatureError> {
        let tbs = certificate.tbs_certificate();
        let key = PublicKey::from_spki(tbs.subject_public_key_info())?;
        let encode = |name: &x509_cert::name::Name| {
            name.to_der()
                .map_err(|error| SignatureError::BadKey(error.to_string()))
        };
        let subject_der = encode(tbs.subject())?;
        let issuer_der = encode(tbs.issuer())?;
        let extension = |oid| {
            tbs.extensions()
                .into_iter()
                .flatten()
                .find(|extension| extension.extn_id == oid)
                .map(|extension| extension.extn_value.as_bytes().to_vec())
        };
        // SubjectKeyIdentifier ::= OCTET STRING
        let subject_key_id = extension(oids::SUBJECT_KEY_IDENTIFIER).and_then(|value| {
            tlv::single(&value, 0x04)
                .ok()
                .map(|octets| octets.value.to_vec())
        });
        // AuthorityKeyIdentifier ::= SEQUENCE { keyIdentifier [0] IMPLICIT OCTET STRING OPTIONAL, … }
        let authority_key_id = extension(oids::AUTHORITY_KEY_IDENTIFIER).and_then(|value| {
            let sequence = tlv::single(&value, 0x30).ok()?;
            tlv::find(sequence.value, 0x80)
                .ok()
                .flatten()
                .map(|id| id.value.to_vec())
        });
        // BasicConstraints ::= SEQUENCE { cA BOOLEAN DEFAULT FALSE, … }
        let is_ca = extension(oids::BASIC_CONSTRAINTS).is_some_and(|value| {
            tlv::single(&value, 0x30)
                .ok()
                .and_then(|sequence| tlv::find(sequence.value, 0x01).ok().flatten())
                .is_some_and(|flag| flag.value == [0xFF])
        });
        let validity = tbs.validity();
        Ok(Self {
            not_before: timestamp(&validity.not_before),
            not_after: timestamp(&validity.not_after),
            key,
            subject_der,
            issuer_der,
            subject_key_id,
            authority_key_id,
            is_ca,
            certificate,
        })
    }

    pub(crate) fn from_der(der: &[u8]) -> Result<Self, SignatureError> {
        use der::Decode;
        let certificate = Certificate::from_der(der)
            .map_err(|error| SignatureError::BadKey(format!("certificate: {error}")))?;
        Self::new(certificate)
    }

    /// Whether `issuer` may have issued this certificate (its signature then decides).
    pub(crate) fn names_issuer(&self, issuer: &Cert) -> bool {
        match (&self.authority_key_id, &issuer.subject_key_id) {
            // Key identifiers decide when both exist (names may differ in string types).
            (Some(authority), Some(subject)) => authority == subject,
            _ => self.issuer_der == issuer.subject_der,
        }
    }

    /// Checks this certificate's signature with `issuer`'s key, over the TBS bytes as they were
    /// encoded (re-encoding a strictly decoded DER structure gives the same bytes).
    pub(crate) fn verify_issued_by(&self, issuer: &Cert) -> Result<(), SignatureError> {
        let scheme = Scheme::of(self.certificate.signature_algorithm(), None)?;
        let tbs = self
            .certificate
            .tbs_certificate()
            .to_der()
            .map_err(|error| SignatureError::BadKey(error.to_string()))?;
        let signature = self
            .certificate
            .signature()
            .as_bytes()
            .ok_or(SignatureError::Invalid)?;
        scheme.verify(&issuer.key, &tbs, signature)
    }

    /// `Expired` or `NotYetValid` for `role` when `at` is outside the validity.
    pub(crate) fn valid_at(
        &self,
        at: Timestamp,
        role: CertificateRole,
    ) -> Result<(), PassiveFailure> {
        if at < self.not_before {
            return Err(PassiveFailure::NotYetValid(role));
        }
        if at > self.not_after {
            return Err(PassiveFailure::Expired(role));
        }
        Ok(())
    }

    pub(crate) fn serial(&self) -> &[u8] {
        self.certificate
            .tbs_certificate()
            .serial_number()
            .as_bytes()
    }

    pub(crate) fn document_signer(&self) -> DocumentSigner {
        let tbs = self.certificate.tbs_certificate();
        DocumentSigner {
            subject: tbs.subject().to_string(),
            issuer: tbs.issuer().to_string(),
            serial_number: hex(self.serial()),
            not_before: self.not_before,
            not_after: self.not_after,
        }
    }

    pub(crate) fn csca(&self) -> CscaAnchor {
        CscaAnchor {
            subject: self.certificate.tbs_certificate().subject().to_string(),
            key_id: self.subject_key_id.as_deref().map(hex),
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
