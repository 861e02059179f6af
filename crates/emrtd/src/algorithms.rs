//! Hashes, public keys and signature schemes: which ICAO 9303-12 algorithm an OID names, and
//! the RustCrypto primitive that checks it.

use der::asn1::ObjectIdentifier;
use der::{Decode, Tagged};
use idconsent_verification::chip::AaKeyType;
use rsa::BoxedUint;
use rsa::pkcs1v15::Pkcs1v15Sign;
use rsa::pss::Pss;
use rsa::traits::PublicKeyParts;
use sha1::Sha1;
use sha2::{Digest, Sha224, Sha256, Sha384, Sha512};
use spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};

use crate::curves::{Curve, EcError, EcdsaEncoding, identify_explicit};
use crate::oids;
use crate::tlv;

/// The smallest RSA modulus accepted (ICAO 9303-12 allows 1024-bit active-authentication keys
/// on older chips); the `rsa` crate caps the largest at 8192 bits and the exponent at 2^33-1,
/// which bounds the cost of one verification.
pub(crate) const MIN_RSA_BITS: u32 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// The hashes of ICAO 9303-12.
pub enum HashAlgorithm {
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl HashAlgorithm {
    pub(crate) fn from_oid(oid: &ObjectIdentifier) -> Option<Self> {
        [
            (oids::SHA1, Self::Sha1),
            (oids::SHA224, Self::Sha224),
            (oids::SHA256, Self::Sha256),
            (oids::SHA384, Self::Sha384),
            (oids::SHA512, Self::Sha512),
        ]
        .into_iter()
        .find_map(|(known, hash)| (known == *oid).then_some(hash))
    }

    #[cfg(feature = "fixtures")]
    pub(crate) fn oid(self) -> ObjectIdentifier {
        match self {
            Self::Sha1 => oids::SHA1,
            Self::Sha224 => oids::SHA224,
            Self::Sha256 => oids::SHA256,
            Self::Sha384 => oids::SHA384,
            Self::Sha512 => oids::SHA512,
        }
    }

    /// The hash of the concatenation of `parts`.
    pub fn digest(self, parts: &[&[u8]]) -> Vec<u8> {
        fn run<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
            let mut hasher = D::new();
            for part in parts {
                hasher.update(part);
            }
            hasher.finalize().to_vec()
        }
        match self {
            Self::Sha1 => run::<Sha1>(parts),
            Self::Sha224 => run::<Sha224>(parts),
            Self::Sha256 => run::<Sha256>(parts),
            Self::Sha384 => run::<Sha384>(parts),
            Self::Sha512 => run::<Sha512>(parts),
        }
    }

    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> usize {
        match self {
            Self::Sha1 => 20,
            Self::Sha224 => 28,
            Self::Sha256 => 32,
            Self::Sha384 => 48,
            Self::Sha512 => 64,
        }
    }

    /// The hash-function identifier of ISO/IEC 10118-3 that an ISO/IEC 9796-2 trailer `xxCC`
    /// carries.
    pub(crate) fn iso_id(self) -> u8 {
        match self {
            Self::Sha1 => 0x33,
            Self::Sha256 => 0x34,
            Self::Sha512 => 0x35,
            Self::Sha384 => 0x36,
            Self::Sha224 => 0x38,
        }
    }

    pub(crate) fn from_iso_id(id: u8) -> Option<Self> {
        [
            Self::Sha1,
            Self::Sha224,
            Self::Sha256,
            Self::Sha384,
            Self::Sha512,
        ]
        .into_iter()
        .find(|hash| hash.iso_id() == id)
    }
}

/// A public key from a certificate or DG15.
#[derive(Debug, Clone)]
pub(crate) enum PublicKey {
    Rsa(rsa::RsaPublicKey),
    Ec { curve: Curve, point: Vec<u8> },
}

/// Why a key or signature could not be checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SignatureError {
    /// The signature does not verify (or does not fit the key).
    Invalid,
    /// An algorithm this build does not implement, by name or OID.
    Unsupported(String),
    /// The key cannot be read.
    BadKey(String),
}

impl PublicKey {
    pub(crate) fn from_spki_der(der: &[u8]) -> Result<Self, SignatureError> {
        let spki = SubjectPublicKeyInfoOwned::from_der(der)
            .map_err(|error| SignatureError::BadKey(error.to_string()))?;
        Self::from_spki(&spki)
    }

    pub(crate) fn from_spki(spki: &SubjectPublicKeyInfoOwned) -> Result<Self, SignatureError> {
        let bad = |what: &str| SignatureError::BadKey(what.to_owned());
        let key_bytes = spki
            .subject_public_key
            .as_bytes()
            .ok_or_else(|| bad("the key's bit string is not whole bytes"))?;
        let oid = spki.algorithm.oid;
        if oid == oids::RSA_ENCRYPTION || oid == oids::RSASSA_PSS {
            return rsa_key(key_bytes).map(Self::Rsa);
        }
        if oid != oids::EC_PUBLIC_KEY {
            return Err(SignatureError::Unsupported(format!("key type {oid}")));
        }
        let parameters = spki
            .algorithm
            .parameters
            .as_ref()
            .ok_or_else(|| bad("an EC key without curve parameters"))?;
        let curve = if parameters.tag() == der::Tag::ObjectIdentifier {
            let named = parameters
                .decode_as::<ObjectIdentifier>()
                .map_err(|error| SignatureError::BadKey(error.to_string()))?;
            Curve::named(&named).map_err(SignatureError::Unsupported)?
        } else {
            let explicit = der::Encode::to_der(parameters)
                .map_err(|e| SignatureError::BadKey(e.to_string()))?;
            identify_explicit(&explicit).map_err(SignatureError::Unsupported)?
        };
        Ok(Self::Ec {
            curve,
            point: key_bytes.to_vec(),
        })
    }

    /// What the API says about an active-authentication key.
    pub(crate) fn describe(&self) -> AaKeyType {
        match self {
            Self::Rsa(key) => AaKeyType::Rsa {
                bits: key.n().bits(),
            },
            Self::Ec { curve, .. } => AaKeyType::Ecdsa {
                curve: curve.name().to_owned(),
            },
        }
    }
}

/// `RSAPublicKey ::= SEQUENCE { modulus INTEGER, publicExponent INTEGER }`.
fn rsa_key(der: &[u8]) -> Result<rsa::RsaPublicKey, SignatureError> {
    let bad = |what: &str| SignatureError::BadKey(format!("RSA key: {what}"));
    let sequence = tlv::single(der, 0x30).map_err(|e| bad(&e.to_string()))?;
    let mut integers = tlv::children(sequence.value);
    let mut next = || -> Result<BoxedUint, SignatureError> {
        let integer = integers
            .next()
            .ok_or_else(|| bad("missing integer"))?
            .map_err(|e| bad(&e.to_string()))?;
        if integer.tag != 0x02 || integer.value.is_empty() || integer.value[0] & 0x80 != 0 {
            return Err(bad("not a positive integer"));
        }
        let digits = trim_zeros(integer.value);
        if digits.is_empty() || digits.len() > 1024 {
            return Err(bad("integer out of range"));
        }
        let bits = u32::try_from(digits.len() * 8).map_err(|_| bad("integer out of range"))?;
        BoxedUint::from_be_slice(digits, bits).map_err(|_| bad("integer out of range"))
    };
    let modulus = next()?;
    let exponent = next()?;
    if modulus.bits() < MIN_RSA_BITS {
        return Err(bad("modulus shorter than 1024 bits"));
    }
    rsa::RsaPublicKey::new(modulus, exponent).map_err(|error| bad(&error.to_string()))
}

pub(crate) fn trim_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

/// A signature scheme with its hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    RsaPkcs1(HashAlgorithm),
    RsaPss { hash: HashAlgorithm, salt: usize },
    Ecdsa(HashAlgorithm, EcdsaEncoding),
}

impl Scheme {
    /// The scheme `algorithm` names. `digest` is the separate digest algorithm of a CMS
    /// SignerInfo, which bare `rsaEncryption` and `id-ecPublicKey` identifiers rely on.
    pub(crate) fn of(
        algorithm: &AlgorithmIdentifierOwned,
        digest: Option<HashAlgorithm>,
    ) -> Result<Self, SignatureError> {
        use EcdsaEncoding::{Der, Plain};
        use HashAlgorithm::*;
        let oid = algorithm.oid;
        let unsupported = || SignatureError::Unsupported(format!("signature algorithm {oid}"));
        let with_digest = || digest.ok_or_else(unsupported);
        let table = [
            (oids::SHA1_WITH_RSA, Self::RsaPkcs1(Sha1)),
            (oids::SHA224_WITH_RSA, Self::RsaPkcs1(Sha224)),
            (oids::SHA256_WITH_RSA, Self::RsaPkcs1(Sha256)),
            (oids::SHA384_WITH_RSA, Self::RsaPkcs1(Sha384)),
            (oids::SHA512_WITH_RSA, Self::RsaPkcs1(Sha512)),
            (oids::ECDSA_WITH_SHA1, Self::Ecdsa(Sha1, Der)),
            (oids::ECDSA_WITH_SHA224, Self::Ecdsa(Sha224, Der)),
            (oids::ECDSA_WITH_SHA256, Self::Ecdsa(Sha256, Der)),
            (oids::ECDSA_WITH_SHA384, Self::Ecdsa(Sha384, Der)),
            (oids::ECDSA_WITH_SHA512, Self::Ecdsa(Sha512, Der)),
            (oids::ECDSA_PLAIN_SHA1, Self::Ecdsa(Sha1, Plain)),
            (oids::ECDSA_PLAIN_SHA224, Self::Ecdsa(Sha224, Plain)),
            (oids::ECDSA_PLAIN_SHA256, Self::Ecdsa(Sha256, Plain)),
            (oids::ECDSA_PLAIN_SHA384, Self::Ecdsa(Sha384, Plain)),
            (oids::ECDSA_PLAIN_SHA512, Self::Ecdsa(Sha512, Plain)),
        ];
        if let Some((_, scheme)) = table.iter().find(|(known, _)| *known == oid) {
            return Ok(*scheme);
        }
        if oid == oids::RSA_ENCRYPTION {
            return Ok(Self::RsaPkcs1(with_digest()?));
        }
        if oid == oids::EC_PUBLIC_KEY {
            return Ok(Self::Ecdsa(with_digest()?, Der));
        }
        if oid == oids::RSASSA_PSS {
            let parameters = algorithm
                .parameters
                .as_ref()
                .map(der::Encode::to_der)
                .transpose()
                .map_err(|e| SignatureError::Unsupported(format!("RSASSA-PSS parameters: {e}")))?;
            return pss_parameters(parameters.as_deref());
        }
        Err(unsupported())
    }

    pub(crate) fn hash(self) -> HashAlgorithm {
        match self {
            Self::RsaPkcs1(hash) | Self::RsaPss { hash, .. } | Self::Ecdsa(hash, _) => hash,
        }
    }

    /// Verifies `signature` over `message` (hashed here with the scheme's hash).
    pub(crate) fn verify(
        self,
        key: &PublicKey,
        message: &[u8],
        signature: &[u8],
    ) -> Result<(), SignatureError> {
        let digest = self.hash().digest(&[message]);
        self.verify_digest(key, &digest, signature)
    }

    pub(crate) fn verify_digest(
        self,
        key: &PublicKey,
        digest: &[u8],
        signature: &[u8],
    ) -> Result<(), SignatureError> {
        macro_rules! by_hash {
            ($hash:expr, $make:ident) => {
                match $hash {
                    HashAlgorithm::Sha1 => $make!(Sha1),
                    HashAlgorithm::Sha224 => $make!(Sha224),
                    HashAlgorithm::Sha256 => $make!(Sha256),
                    HashAlgorithm::Sha384 => $make!(Sha384),
                    HashAlgorithm::Sha512 => $make!(Sha512),
                }
            };
        }
        match (self, key) {
            (Self::RsaPkcs1(hash), PublicKey::Rsa(key)) => {
                macro_rules! pkcs1 {
                    ($d:ty) => {
                        Pkcs1v15Sign::new::<$d>()
                    };
                }
                let scheme = by_hash!(hash, pkcs1);
                key.verify(scheme, digest, signature)
                    .map_err(|_| SignatureError::Invalid)
            }
            (Self::RsaPss { hash, salt }, PublicKey::Rsa(key)) => {
                macro_rules! pss {
                    ($d:ty) => {
                        key.verify(Pss::<$d>::new_with_salt(salt), digest, signature)
                    };
                }
                by_hash!(hash, pss).map_err(|_| SignatureError::Invalid)
            }
            (Self::Ecdsa(_, encoding), PublicKey::Ec { curve, point }) => curve
                .verify(point, digest, signature, encoding)
                .map_err(|error| match error {
                    EcError::BadPoint => SignatureError::BadKey("EC point not on the curve".into()),
                    EcError::Invalid => SignatureError::Invalid,
                }),
            _ => Err(SignatureError::Invalid),
        }
    }
}

/// `RSASSA-PSS-params` (RFC 8017 A.2.3) with its defaults (SHA-1, MGF1-SHA-1, salt 20). The
/// MGF1 hash must be the message hash: the `rsa` crate uses one digest for both.
fn pss_parameters(der: Option<&[u8]>) -> Result<Scheme, SignatureError> {
    let unsupported = |what: &str| SignatureError::Unsupported(format!("RSASSA-PSS {what}"));
    let mut hash = HashAlgorithm::Sha1;
    let mut mgf_hash = HashAlgorithm::Sha1;
    let mut salt = 20usize;
    let Some(der) = der else {
        return Ok(Scheme::RsaPss { hash, salt });
    };
    if der == [0x05, 0x00] {
        return Ok(Scheme::RsaPss { hash, salt });
    }
    let sequence = tlv::single(der, 0x30).map_err(|e| unsupported(&e.to_string()))?;
    let algorithm_hash = |value: &[u8]| -> Result<HashAlgorithm, SignatureError> {
        let identifier = tlv::single(value, 0x30).map_err(|e| unsupported(&e.to_string()))?;
        let oid = tlv::require(identifier.value, 0x06).map_err(|e| unsupported(&e.to_string()))?;
        let oid = ObjectIdentifier::from_der(oid.raw).map_err(|e| unsupported(&e.to_string()))?;
        HashAlgorithm::from_oid(&oid).ok_or_else(|| unsupported(&format!("hash {oid}")))
    };
    for field in tlv::children(sequence.value) {
        let field = field.map_err(|e| unsupported(&e.to_string()))?;
        match field.tag {
            0xA0 => hash = algorithm_hash(field.value)?,
            0xA1 => {
                let mgf =
                    tlv::single(field.value, 0x30).map_err(|e| unsupported(&e.to_string()))?;
                let mut parts = tlv::children(mgf.value);
                let oid = parts
                    .next()
                    .and_then(Result::ok)
                    .ok_or_else(|| unsupported("mask generation"))?;
                if oid.value != oids::MGF1.as_bytes() {
                    return Err(unsupported("mask generation other than MGF1"));
                }
                let inner = parts
                    .next()
                    .and_then(Result::ok)
                    .ok_or_else(|| unsupported("MGF1 hash"))?;
                mgf_hash = algorithm_hash(inner.raw)?;
            }
            0xA2 => {
                let integer =
                    tlv::single(field.value, 0x02).map_err(|e| unsupported(&e.to_string()))?;
                let digits = trim_zeros(integer.value);
                if digits.len() > 2 {
                    return Err(unsupported("salt length"));
                }
                salt = digits
                    .iter()
                    .fold(0usize, |acc, digit| (acc << 8) | usize::from(*digit));
            }
            0xA3 => {
                if field.value != [0x02, 0x01, 0x01] {
                    return Err(unsupported("trailer field"));
                }
            }
            _ => return Err(unsupported("parameters")),
        }
    }
    if mgf_hash != hash {
        return Err(unsupported("with an MGF1 hash other than the message hash"));
    }
    Ok(Scheme::RsaPss { hash, salt })
}
