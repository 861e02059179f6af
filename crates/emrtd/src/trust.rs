//! The operator's trust store (`IDC_CSCA_DIR`): CSCA certificates, CSCA master lists and CRLs.
//! Nothing is trusted by default.
//!
//! - Every CA certificate file (PEM or DER: `.pem`, `.crt`, `.cer`, `.der`) is an anchor: a
//!   CSCA, or a CSCA link certificate, which is then an anchor in its own right.
//! - A master list (`.ml`: CMS SignedData of a `CscaMasterList`) adds its CSCAs only when its
//!   signature verifies with its Master List Signer certificate and that certificate was issued
//!   by an anchor from a certificate file, both valid when the store is loaded. So to use the
//!   BSI or ICAO master list, the operator also places the CSCA that issued its signer. A master
//!   list never vouches for another master list.
//! - A CRL (`.crl`, DER or PEM) counts when an anchor named as its issuer signed it; its
//!   revoked serials then apply to the document signers that anchor issued.
//!
//! Files the store could not use are listed in [`TrustStore::rejected`] with the reason.

use std::collections::HashSet;
use std::path::Path;

use der::Decode;
use idconsent_kernel::Timestamp;
use idconsent_verification::chip::{CertificateRole, PassiveFailure, Revocation};
use x509_cert::Certificate;
use x509_cert::crl::CertificateList;

use crate::algorithms::{Scheme, SignatureError};
use crate::certs::Cert;
use crate::oids;
use crate::signed;
use crate::tlv;

/// The largest trust file read (the ICAO master list is about 1 MB).
pub const MAX_TRUST_FILE: u64 = 16 * 1024 * 1024;
/// The most files read from the directory.
pub const MAX_TRUST_FILES: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnchorSource {
    CertificateFile,
    MasterList,
}

#[derive(Debug, Clone)]
struct Anchor {
    cert: Cert,
    source: AnchorSource,
}

#[derive(Debug, Clone)]
struct Crl {
    /// Index of the anchor that signed it.
    issuer: usize,
    revoked: HashSet<Vec<u8>>,
    next_update: Option<Timestamp>,
}

/// A file the store did not use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub file: String,
    pub reason: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read the trust directory {path}: {source}")]
    Directory {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Rejected(String),
}

#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    anchors: Vec<Anchor>,
    crls: Vec<Crl>,
    rejected: Vec<Rejected>,
}

fn rejected(reason: impl std::fmt::Display) -> TrustError {
    TrustError::Rejected(reason.to_string())
}

/// The DER documents in a file: PEM blocks when it is PEM, else the bytes as they are.
fn documents(bytes: &[u8]) -> Vec<Vec<u8>> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return vec![bytes.to_vec()];
    };
    if !text.contains("-----BEGIN ") {
        return vec![bytes.to_vec()];
    }
    text.split("-----BEGIN ")
        .skip(1)
        .filter_map(|block| {
            let body = block.split_once("-----")?.1;
            let body = body.split("-----END ").next()?;
            let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
            base64_decode(&compact)
        })
        .collect()
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

impl TrustStore {
    /// A store that trusts nothing.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Reads every file of `dir` (not its subdirectories) by extension; `at` judges the master
    /// list signers' validity. Unusable files are listed in [`Self::rejected`]; only an
    /// unreadable directory is an error.
    pub fn load_dir(dir: &Path, at: Timestamp) -> Result<Self, TrustError> {
        let directory = |source| TrustError::Directory {
            path: dir.display().to_string(),
            source,
        };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(directory)?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_file())
            .take(MAX_TRUST_FILES)
            .collect();
        files.sort();
        let extension = |path: &Path| {
            path.extension()
                .and_then(|ext| ext.to_str())
                .map(str::to_ascii_lowercase)
                .unwrap_or_default()
        };
        let mut store = Self::empty();
        // Certificates first, then master lists (their signers chain to certificate files),
        // then CRLs (signed by any anchor).
        for pass in 0..3 {
            for path in &files {
                let kind = match extension(path).as_str() {
                    "pem" | "crt" | "cer" | "der" => 0,
                    "ml" => 1,
                    "crl" => 2,
                    _ => continue,
                };
                if kind != pass {
                    continue;
                }
                let name = path.display().to_string();
                let outcome = read_bounded(path).and_then(|bytes| match kind {
                    0 => store.add_certificates(&bytes).map(|_| ()),
                    1 => store.add_master_list(&bytes, at).map(|_| ()),
                    _ => store.add_crl(&bytes),
                });
                if let Err(error) = outcome {
                    tracing::warn!(trust.file = %name, error = %error, "trust file not used");
                    store.rejected.push(Rejected {
                        file: name,
                        reason: error.to_string(),
                    });
                }
            }
        }
        Ok(store)
    }

    /// Files [`Self::load_dir`] did not use.
    pub fn rejected(&self) -> &[Rejected] {
        &self.rejected
    }

    pub fn anchor_count(&self) -> usize {
        self.anchors.len()
    }

    pub fn crl_count(&self) -> usize {
        self.crls.len()
    }

    /// Adds the CA certificates of a PEM or DER file as anchors; returns how many.
    pub fn add_certificates(&mut self, bytes: &[u8]) -> Result<usize, TrustError> {
        // All or nothing: one unusable certificate rejects the file.
        let mut certificates = Vec::new();
        for der in documents(bytes) {
            let cert = Cert::from_der(&der).map_err(|e| rejected(format!("{e:?}")))?;
            if !cert.is_ca {
                return Err(rejected("not a CA certificate (basicConstraints cA)"));
            }
            certificates.push(cert);
        }
        if certificates.is_empty() {
            return Err(rejected("no certificate in the file"));
        }
        let added = certificates.len();
        for cert in certificates {
            self.push(cert, AnchorSource::CertificateFile);
        }
        Ok(added)
    }

    fn push(&mut self, cert: Cert, source: AnchorSource) {
        let der = der::Encode::to_der(&cert.certificate).ok();
        let known = self
            .anchors
            .iter()
            .any(|anchor| der::Encode::to_der(&anchor.cert.certificate).ok() == der);
        if !known {
            self.anchors.push(Anchor { cert, source });
        }
    }

    /// Adds the CSCAs of a master list whose signer an anchor from a certificate file issued;
    /// returns how many certificates it held.
    pub fn add_master_list(&mut self, bytes: &[u8], at: Timestamp) -> Result<usize, TrustError> {
        let der = documents(bytes).into_iter().next().unwrap_or_default();
        let list = signed::parse(&der, oids::CSCA_MASTER_LIST)
            .map_err(|e| rejected(format!("master list: {e:?}")))?;
        list.verify()
            .map_err(|e| rejected(format!("master list signature: {e:?}")))?;
        let signer = &list.signer;
        let issuer = self
            .anchors
            .iter()
            .filter(|anchor| anchor.source == AnchorSource::CertificateFile)
            .find(|anchor| {
                signer.names_issuer(&anchor.cert) && signer.verify_issued_by(&anchor.cert).is_ok()
            })
            .ok_or_else(|| rejected("the master list signer was not issued by a trusted CSCA"))?;
        issuer
            .cert
            .valid_at(at, CertificateRole::Csca)
            .and_then(|()| signer.valid_at(at, CertificateRole::DocumentSigner))
            .map_err(|e| rejected(format!("master list signer chain: {e}")))?;
        // CscaMasterList ::= SEQUENCE { version INTEGER, certList SET OF Certificate }
        let sequence = tlv::single(&list.content, 0x30).map_err(rejected)?;
        let set = tlv::children(sequence.value)
            .nth(1)
            .ok_or_else(|| rejected("master list without certificates"))?
            .map_err(rejected)?;
        let mut count = 0;
        for entry in tlv::children(set.value) {
            let entry = entry.map_err(rejected)?;
            let certificate = Certificate::from_der(entry.raw).map_err(rejected)?;
            match Cert::new(certificate) {
                Ok(cert) if cert.is_ca => {
                    self.push(cert, AnchorSource::MasterList);
                    count += 1;
                }
                Ok(_) => tracing::debug!("a master list entry that is not a CA was skipped"),
                // A CSCA on a curve this build lacks is skipped, not the whole list.
                Err(error) => tracing::debug!(error = ?error, "a master list entry was skipped"),
            }
        }
        Ok(count)
    }

    /// Adds a CRL signed by an anchor.
    pub fn add_crl(&mut self, bytes: &[u8]) -> Result<(), TrustError> {
        let der = documents(bytes).into_iter().next().unwrap_or_default();
        let crl: CertificateList = CertificateList::from_der(&der).map_err(rejected)?;
        let tbs = der::Encode::to_der(&crl.tbs_cert_list).map_err(rejected)?;
        let issuer_der = der::Encode::to_der(&crl.tbs_cert_list.issuer).map_err(rejected)?;
        let signature = crl
            .signature
            .as_bytes()
            .ok_or_else(|| rejected("CRL signature"))?;
        let scheme = Scheme::of(&crl.signature_algorithm, None)
            .map_err(|e| rejected(format!("CRL: {e:?}")))?;
        let issuer = self
            .anchors
            .iter()
            .position(|anchor| {
                anchor.cert.subject_der == issuer_der
                    && scheme.verify(&anchor.cert.key, &tbs, signature).is_ok()
            })
            .ok_or_else(|| rejected("the CRL is not signed by a trusted CSCA"))?;
        let revoked = crl
            .tbs_cert_list
            .revoked_certificates
            .iter()
            .flatten()
            .map(|entry| entry.serial_number.as_bytes().to_vec())
            .collect();
        let next_update = crl.tbs_cert_list.next_update.map(|time| {
            Timestamp::from_millis(
                i64::try_from(time.to_unix_duration().as_millis()).unwrap_or(i64::MAX),
            )
        });
        self.crls.push(Crl {
            issuer,
            revoked,
            next_update,
        });
        Ok(())
    }

    /// The anchor that issued `signer`, checked: its signature, both validities at `at`, and
    /// the CRLs of that anchor.
    pub(crate) fn chain(
        &self,
        signer: &Cert,
        at: Timestamp,
    ) -> (Result<(), PassiveFailure>, Option<&Cert>, Revocation) {
        let mut unsupported = None;
        let issuer = self.anchors.iter().position(|anchor| {
            if !signer.names_issuer(&anchor.cert) {
                return false;
            }
            match signer.verify_issued_by(&anchor.cert) {
                Ok(()) => true,
                Err(SignatureError::Unsupported(what)) => {
                    unsupported = Some(what);
                    false
                }
                Err(_) => false,
            }
        });
        let Some(index) = issuer else {
            let failure = match unsupported {
                Some(what) => PassiveFailure::UnsupportedAlgorithm(what),
                None => PassiveFailure::UntrustedDocumentSigner,
            };
            return (Err(failure), None, Revocation::NotChecked);
        };
        let csca = &self.anchors[index].cert;
        let crls: Vec<&Crl> = self.crls.iter().filter(|crl| crl.issuer == index).collect();
        let revocation = if crls.is_empty() {
            Revocation::NotChecked
        } else if crls.iter().any(|crl| crl.revoked.contains(signer.serial())) {
            Revocation::Revoked
        } else {
            let stale = crls
                .iter()
                .all(|crl| crl.next_update.is_some_and(|next| next < at));
            Revocation::NotRevoked { stale }
        };
        let validity = signer
            .valid_at(at, CertificateRole::DocumentSigner)
            .and_then(|()| csca.valid_at(at, CertificateRole::Csca));
        let outcome = match (validity, revocation) {
            (Err(failure), _) => Err(failure),
            (Ok(()), Revocation::Revoked) => Err(PassiveFailure::Revoked),
            (Ok(()), _) => Ok(()),
        };
        (outcome, Some(csca), revocation)
    }
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, TrustError> {
    let size = std::fs::metadata(path).map_err(rejected)?.len();
    if size > MAX_TRUST_FILE {
        return Err(rejected(format!("larger than {MAX_TRUST_FILE} bytes")));
    }
    std::fs::read(path).map_err(rejected)
}
