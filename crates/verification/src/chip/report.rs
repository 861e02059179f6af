//! What a chip verification proved, check by check, with the data read from the chip.
//!
//! Passive authentication proves the data groups were signed by a document signer that a
//! trusted CSCA issued; active authentication proves the chip holds the private key of DG15
//! (so it is not a copy); neither proves that the person holding the passport is its holder.

use idconsent_kernel::Timestamp;

use super::evidence::DataGroup;
use crate::mrz::MrzData;

/// Which certificate of the chain a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CertificateRole {
    DocumentSigner,
    Csca,
}

/// Why passive authentication failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PassiveFailure {
    /// The SOD is not a CMS SignedData over an LDS security object as ICAO 9303-10 defines, or
    /// a certificate in it cannot be read. The text says what (never personal data).
    #[error("the SOD is malformed: {0}")]
    BadStructure(String),
    /// The SOD's signature does not verify with its document signer certificate, or its
    /// signed attributes do not match its content.
    #[error("the SOD's signature is invalid")]
    SignatureInvalid,
    /// No CSCA of the trust store issued the document signer certificate.
    #[error("the document signer was not issued by a trusted CSCA")]
    UntrustedDocumentSigner,
    #[error("the {0:?} certificate had expired at the time of the check")]
    Expired(CertificateRole),
    #[error("the {0:?} certificate was not yet valid at the time of the check")]
    NotYetValid(CertificateRole),
    /// The document signer's serial is on a CRL its CSCA signed.
    #[error("the document signer certificate is revoked")]
    Revoked,
    #[error("the hash of {0} does not match the SOD")]
    HashMismatch(DataGroup),
    /// A data group was sent that the SOD has no hash for: nothing signed it.
    #[error("{0} is not covered by the SOD")]
    NotSigned(DataGroup),
    /// An algorithm (named by its OID) this verifier does not implement.
    #[error("unsupported algorithm {0}")]
    UnsupportedAlgorithm(String),
}

impl PassiveFailure {
    /// A stable code for the API and logs.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadStructure(_) => "bad_sod_structure",
            Self::SignatureInvalid => "signature_invalid",
            Self::UntrustedDocumentSigner => "untrusted_document_signer",
            Self::Expired(CertificateRole::DocumentSigner) => "document_signer_expired",
            Self::Expired(CertificateRole::Csca) => "csca_expired",
            Self::NotYetValid(CertificateRole::DocumentSigner) => "document_signer_not_yet_valid",
            Self::NotYetValid(CertificateRole::Csca) => "csca_not_yet_valid",
            Self::Revoked => "document_signer_revoked",
            Self::HashMismatch(_) => "data_group_hash_mismatch",
            Self::NotSigned(_) => "data_group_not_signed",
            Self::UnsupportedAlgorithm(_) => "unsupported_algorithm",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PassiveAuthentication {
    Passed,
    Failed(PassiveFailure),
}

impl PassiveAuthentication {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed(_) => "failed",
        }
    }

    pub fn passed(&self) -> bool {
        matches!(self, Self::Passed)
    }
}

/// Why active authentication failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActiveFailure {
    /// The answer came without a challenge this server issued (none was found for the
    /// application, it expired or it was used).
    #[error("no challenge was issued for this answer")]
    ChallengeNotIssued,
    /// The answer's challenge is not the one this server issued (an old answer replayed).
    #[error("the answer is for another challenge")]
    ChallengeMismatch,
    /// DG15 did not pass passive authentication, so its key proves nothing.
    #[error("DG15 is not authenticated by the SOD")]
    KeyNotAuthenticated,
    #[error("DG15's public key cannot be read: {0}")]
    BadKey(String),
    #[error("unsupported algorithm {0}")]
    UnsupportedAlgorithm(String),
    /// The signature does not verify (for RSA: the recovered ISO/IEC 9796-2 block's header,
    /// trailer or hash is wrong): another key signed it, or another challenge.
    #[error("the chip's signature is invalid")]
    SignatureInvalid,
}

impl ActiveFailure {
    pub fn code(&self) -> &'static str {
        match self {
            Self::ChallengeNotIssued => "challenge_not_issued",
            Self::ChallengeMismatch => "challenge_mismatch",
            Self::KeyNotAuthenticated => "key_not_authenticated",
            Self::BadKey(_) => "bad_key",
            Self::UnsupportedAlgorithm(_) => "unsupported_algorithm",
            Self::SignatureInvalid => "signature_invalid",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActiveAuthentication {
    /// The chip signed this server's fresh challenge with the private key of the DG15 that the
    /// SOD authenticates: the chip is not a copy.
    Passed,
    Failed(ActiveFailure),
    /// The chip has no DG15: it does not support active authentication.
    NotSupported,
    /// The chip has DG15 but no answer was sent.
    NotAttempted,
}

impl ActiveAuthentication {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed(_) => "failed",
            Self::NotSupported => "not_supported",
            Self::NotAttempted => "not_attempted",
        }
    }
}

/// Chip Authentication (ICAO 9303-11 §6.2) needs a secure-messaging session with the chip,
/// which only the reader (the wallet) has; this service does not run it. Reading DG14 is not
/// chip authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChipAuthentication {
    /// DG14 offers chip authentication; it was not verified here.
    NotVerified,
    /// No DG14, or DG14 without a chip-authentication key.
    NotSupported,
}

impl ChipAuthentication {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotVerified => "not_verified",
            Self::NotSupported => "not_supported",
        }
    }
}

/// The document signer certificate the SOD carried.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentSigner {
    /// RFC 4514 distinguished names.
    pub subject: String,
    pub issuer: String,
    /// Lowercase hex of the serial number's bytes.
    pub serial_number: String,
    pub not_before: Timestamp,
    pub not_after: Timestamp,
}

/// The trusted CSCA certificate that issued the document signer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CscaAnchor {
    pub subject: String,
    /// Lowercase hex of its subject key identifier, when it has one.
    pub key_id: Option<String>,
}

/// Whether the document signer's revocation was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revocation {
    /// No CRL of its CSCA was supplied.
    NotChecked,
    /// A CRL its CSCA signed does not list it; `stale` when the CRL's next update had passed.
    NotRevoked {
        stale: bool,
    },
    Revoked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PortraitFormat {
    Jpeg,
    Jpeg2000,
}

/// DG2's first face image (ISO/IEC 19794-5), for the face matcher.
#[derive(Clone, PartialEq, Eq)]
pub struct Portrait {
    pub format: PortraitFormat,
    /// Width and height from the image information block.
    pub width: u16,
    pub height: u16,
    pub image: Vec<u8>,
}

impl std::fmt::Debug for Portrait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Portrait")
            .field("format", &self.format)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("bytes", &self.image.len())
            .finish()
    }
}

/// DG11's fields this service uses (ICAO 9303-10 §4.7.11); `<` separators become spaces, and
/// an address's lines are kept apart.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersonalDetails {
    /// Primary and secondary identifiers as on the chip: `SURNAME<<GIVEN<NAMES`, split into
    /// `(surname, given names)`.
    pub full_name: Option<(String, String)>,
    pub personal_number: Option<String>,
    /// `YYYYMMDD` as stored.
    pub full_date_of_birth: Option<String>,
    pub place_of_birth: Option<String>,
    pub address: Option<Vec<String>>,
}

/// The active-authentication key DG15 holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum AaKeyType {
    Rsa { bits: u32 },
    Ecdsa { curve: String },
}

/// A data group that passed its hash check but whose content could not be read; the
/// verification goes on without it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentProblem {
    pub data_group: DataGroup,
    pub reason: String,
}

/// The result of verifying one chip.
///
/// Data read from the chip (`mrz`, `portrait`, `personal_details`) is filled whatever the
/// checks say, so a reviewer can see it; trust it only through [`ChipReport::authentic_mrz`]
/// and the like, which return it only when passive authentication passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChipReport {
    pub passive_authentication: PassiveAuthentication,
    pub active_authentication: ActiveAuthentication,
    pub chip_authentication: ChipAuthentication,
    /// The data groups sent whose hash matched the SOD's (passive authentication may still
    /// have failed on the signature or the chain).
    pub data_groups_verified: Vec<DataGroup>,
    pub document_signer: Option<DocumentSigner>,
    pub csca: Option<CscaAnchor>,
    pub revocation: Revocation,
    pub mrz: Option<MrzData>,
    pub portrait: Option<Portrait>,
    pub personal_details: Option<PersonalDetails>,
    pub active_authentication_key: Option<AaKeyType>,
    pub content_problems: Vec<ContentProblem>,
}

impl ChipReport {
    /// DG1's MRZ when passive authentication passed.
    pub fn authentic_mrz(&self) -> Option<&MrzData> {
        self.passive_authentication
            .passed()
            .then_some(self.mrz.as_ref())
            .flatten()
    }

    /// DG2's portrait when passive authentication passed.
    pub fn authentic_portrait(&self) -> Option<&Portrait> {
        self.passive_authentication
            .passed()
            .then_some(self.portrait.as_ref())
            .flatten()
    }

    /// DG11's details when passive authentication passed.
    pub fn authentic_personal_details(&self) -> Option<&PersonalDetails> {
        self.passive_authentication
            .passed()
            .then_some(self.personal_details.as_ref())
            .flatten()
    }

    /// Whether this chip is proven not to be a clone: passive and active authentication both
    /// passed (chip authentication is not run by this service).
    pub fn proves_original_chip(&self) -> bool {
        self.passive_authentication.passed()
            && self.active_authentication == ActiveAuthentication::Passed
    }
}
