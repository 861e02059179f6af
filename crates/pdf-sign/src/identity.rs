//! The certificate and key that sign certificates: PEM from configuration, or a self-signed
//! pair made once into the data directory for development.

use std::fmt;
use std::io::Write;
use std::path::Path;

use der::{Decode, EncodePem};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair};
use x509_cert::Certificate;

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("the signing certificate is not a PEM X.509 certificate")]
    Certificate,
    #[error("the signing key is not a PEM PKCS#8 ECDSA P-256 or RSA private key")]
    Key,
    #[error("the signing key does not belong to the signing certificate")]
    Mismatch,
    #[error("cannot generate the development signing certificate")]
    Generate,
    #[error("cannot read or write {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

enum Key {
    Ecdsa(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A signing certificate with its private key.
pub struct SigningIdentity {
    certificate: Certificate,
    certificate_der: Vec<u8>,
    key: Key,
    rng: SystemRandom,
}

impl fmt::Debug for SigningIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningIdentity")
            .field(
                "subject",
                &self.certificate.tbs_certificate().subject().to_string(),
            )
            .finish_non_exhaustive()
    }
}

/// `(algorithm OID of the signature, signature bytes)`.
pub(crate) type Signed = (der::asn1::ObjectIdentifier, Vec<u8>);

const ECDSA_WITH_SHA256: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const SHA256_WITH_RSA: der::asn1::ObjectIdentifier =
    der::asn1::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");

impl SigningIdentity {
    /// From a PEM certificate and a PEM PKCS#8 key (ECDSA P-256 or RSA).
    pub fn from_pem(certificate_pem: &str, key_pem: &str) -> Result<Self, IdentityError> {
        let (_, certificate_der) = der::pem::decode_vec(certificate_pem.as_bytes())
            .map_err(|_| IdentityError::Certificate)?;
        let (label, pkcs8) =
            der::pem::decode_vec(key_pem.as_bytes()).map_err(|_| IdentityError::Key)?;
        if label != "PRIVATE KEY" {
            return Err(IdentityError::Key);
        }
        let certificate =
            Certificate::from_der(&certificate_der).map_err(|_| IdentityError::Certificate)?;
        let rng = SystemRandom::new();
        let key = match EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8, &rng) {
            Ok(pair) => Key::Ecdsa(pair),
            Err(_) => Key::Rsa(RsaKeyPair::from_pkcs8(&pkcs8).map_err(|_| IdentityError::Key)?),
        };
        let public_key = match &key {
            Key::Ecdsa(pair) => ring::signature::KeyPair::public_key(pair).as_ref().to_vec(),
            Key::Rsa(pair) => ring::signature::KeyPair::public_key(pair).as_ref().to_vec(),
        };
        let certified = certificate
            .tbs_certificate()
            .subject_public_key_info()
            .subject_public_key
            .raw_bytes()
            .to_vec();
        if certified != public_key {
            return Err(IdentityError::Mismatch);
        }
        Ok(Self {
            certificate,
            certificate_der,
            key,
            rng,
        })
    }

    /// The pair in `dir` (`signing-cert.pem`, `signing-key.pem`), made on first use. Several
    /// processes starting at once end up with the same pair: each file is linked into place
    /// only if absent, then read back.
    pub fn load_or_create_in(dir: &Path) -> Result<Self, IdentityError> {
        let certificate_path = dir.join("signing-cert.pem");
        let key_path = dir.join("signing-key.pem");
        if !key_path.exists() {
            let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
                .map_err(|_| IdentityError::Generate)?;
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
                .map_err(|_| IdentityError::Generate)?;
            params.distinguished_name.push(
                rcgen::DnType::CommonName,
                "idconsent development document signing",
            );
            params.key_usages = vec![
                rcgen::KeyUsagePurpose::DigitalSignature,
                rcgen::KeyUsagePurpose::ContentCommitment,
            ];
            params.not_before = rcgen::date_time_ymd(2025, 1, 1);
            params.not_after = rcgen::date_time_ymd(2045, 1, 1);
            let certificate = params
                .self_signed(&key)
                .map_err(|_| IdentityError::Generate)?;
            write_once(dir, &certificate_path, certificate.pem().as_bytes())?;
            write_once(dir, &key_path, key.serialize_pem().as_bytes())?;
        }
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| IdentityError::Io {
                path: path.display().to_string(),
                source,
            })
        };
        Self::from_pem(&read(&certificate_path)?, &read(&key_path)?)
    }

    pub(crate) fn certificate(&self) -> &Certificate {
        &self.certificate
    }

    pub(crate) fn certificate_der(&self) -> &[u8] {
        &self.certificate_der
    }

    /// Signs `message` (SHA-256 inside the algorithm).
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Signed, ring::error::Unspecified> {
        match &self.key {
            Key::Ecdsa(pair) => Ok((
                ECDSA_WITH_SHA256,
                pair.sign(&self.rng, message)?.as_ref().to_vec(),
            )),
            Key::Rsa(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &self.rng, message, &mut signature)?;
                Ok((SHA256_WITH_RSA, signature))
            }
        }
    }

    /// The certificate as PEM, for validators to trust (`pdfsig`, pyHanko `--trust`).
    pub fn certificate_pem(&self) -> Result<String, der::Error> {
        self.certificate.to_pem(der::pem::LineEnding::LF)
    }
}

/// Writes `bytes` to `path` unless it exists (another process got there first).
fn write_once(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), IdentityError> {
    let io = |source| IdentityError::Io {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut temporary = tempfile_in(dir).map_err(io)?;
    temporary.1.write_all(bytes).map_err(io)?;
    temporary.1.sync_all().map_err(io)?;
    let linked = std::fs::hard_link(&temporary.0, path);
    let _ = std::fs::remove_file(&temporary.0);
    match linked {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(io(error)),
    }
}

/// A new private file in `dir` with a random name.
fn tempfile_in(dir: &Path) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let mut name = [0u8; 8];
    ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut name)
        .map_err(|_| std::io::Error::other("no randomness"))?;
    let path = dir.join(format!(".signing-{}.tmp", hex::encode(name)));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    Ok((path.clone(), options.open(&path)?))
}
