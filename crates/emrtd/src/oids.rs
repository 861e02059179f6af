//! The object identifiers the verifier recognises.

use der::asn1::ObjectIdentifier as Oid;

const fn oid(text: &str) -> Oid {
    Oid::new_unwrap(text)
}

// CMS (RFC 5652) and ICAO 9303-10/-12.
pub(crate) const SIGNED_DATA: Oid = oid("1.2.840.113549.1.7.2");
pub(crate) const CONTENT_TYPE: Oid = oid("1.2.840.113549.1.9.3");
pub(crate) const MESSAGE_DIGEST: Oid = oid("1.2.840.113549.1.9.4");
pub(crate) const LDS_SECURITY_OBJECT: Oid = oid("2.23.136.1.1.1");
pub(crate) const CSCA_MASTER_LIST: Oid = oid("2.23.136.1.1.2");
pub(crate) const ACTIVE_AUTHENTICATION: Oid = oid("2.23.136.1.1.5");
/// id-CA and id-PK (BSI TR-03110): any SecurityInfo under these offers chip authentication.
pub(crate) const CHIP_AUTHENTICATION_ARC: &str = "0.4.0.127.0.7.2.2.3";
pub(crate) const CHIP_AUTHENTICATION_KEY_ARC: &str = "0.4.0.127.0.7.2.2.1";

// Hashes (NIST).
pub(crate) const SHA1: Oid = oid("1.3.14.3.2.26");
pub(crate) const SHA224: Oid = oid("2.16.840.1.101.3.4.2.4");
pub(crate) const SHA256: Oid = oid("2.16.840.1.101.3.4.2.1");
pub(crate) const SHA384: Oid = oid("2.16.840.1.101.3.4.2.2");
pub(crate) const SHA512: Oid = oid("2.16.840.1.101.3.4.2.3");

// RSA (RFC 8017).
pub(crate) const RSA_ENCRYPTION: Oid = oid("1.2.840.113549.1.1.1");
pub(crate) const SHA1_WITH_RSA: Oid = oid("1.2.840.113549.1.1.5");
pub(crate) const SHA224_WITH_RSA: Oid = oid("1.2.840.113549.1.1.14");
pub(crate) const SHA256_WITH_RSA: Oid = oid("1.2.840.113549.1.1.11");
pub(crate) const SHA384_WITH_RSA: Oid = oid("1.2.840.113549.1.1.12");
pub(crate) const SHA512_WITH_RSA: Oid = oid("1.2.840.113549.1.1.13");
pub(crate) const RSASSA_PSS: Oid = oid("1.2.840.113549.1.1.10");
pub(crate) const MGF1: Oid = oid("1.2.840.113549.1.1.8");

// ECDSA (RFC 5758, X9.62) and BSI TR-03111's plain r‖s signatures.
pub(crate) const EC_PUBLIC_KEY: Oid = oid("1.2.840.10045.2.1");
pub(crate) const PRIME_FIELD: Oid = oid("1.2.840.10045.1.1");
pub(crate) const ECDSA_WITH_SHA1: Oid = oid("1.2.840.10045.4.1");
pub(crate) const ECDSA_WITH_SHA224: Oid = oid("1.2.840.10045.4.3.1");
pub(crate) const ECDSA_WITH_SHA256: Oid = oid("1.2.840.10045.4.3.2");
pub(crate) const ECDSA_WITH_SHA384: Oid = oid("1.2.840.10045.4.3.3");
pub(crate) const ECDSA_WITH_SHA512: Oid = oid("1.2.840.10045.4.3.4");
pub(crate) const ECDSA_PLAIN_SHA1: Oid = oid("0.4.0.127.0.7.1.1.4.1.1");
pub(crate) const ECDSA_PLAIN_SHA224: Oid = oid("0.4.0.127.0.7.1.1.4.1.2");
pub(crate) const ECDSA_PLAIN_SHA256: Oid = oid("0.4.0.127.0.7.1.1.4.1.3");
pub(crate) const ECDSA_PLAIN_SHA384: Oid = oid("0.4.0.127.0.7.1.1.4.1.4");
pub(crate) const ECDSA_PLAIN_SHA512: Oid = oid("0.4.0.127.0.7.1.1.4.1.5");

// Named curves.
pub(crate) const P256: Oid = oid("1.2.840.10045.3.1.7");
pub(crate) const P384: Oid = oid("1.3.132.0.34");
pub(crate) const P521: Oid = oid("1.3.132.0.35");
pub(crate) const BRAINPOOL_P256R1: Oid = oid("1.3.36.3.3.2.8.1.1.7");
pub(crate) const BRAINPOOL_P384R1: Oid = oid("1.3.36.3.3.2.8.1.1.11");
pub(crate) const BRAINPOOL_P512R1: Oid = oid("1.3.36.3.3.2.8.1.1.13");

// X.509 extensions (RFC 5280).
pub(crate) const SUBJECT_KEY_IDENTIFIER: Oid = oid("2.5.29.14");
pub(crate) const AUTHORITY_KEY_IDENTIFIER: Oid = oid("2.5.29.35");
pub(crate) const BASIC_CONSTRAINTS: Oid = oid("2.5.29.19");
