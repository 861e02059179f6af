//! The elliptic curves of ICAO 9303-12 that RustCrypto implements, found by name or by their
//! explicit domain parameters (many passports, German ones among them, spell the parameters out
//! in DG15 and in certificates instead of naming the curve).

use der::asn1::ObjectIdentifier;
use ecdsa::signature::hazmat::PrehashVerifier;
use elliptic_curve::bigint::Encoding;
use elliptic_curve::{Field, PrimeField};
use primeorder::PrimeCurveParams;

use crate::oids;
use crate::tlv;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Curve {
    P256,
    P384,
    P521,
    BrainpoolP256r1,
    BrainpoolP384r1,
}

/// How the signature's two integers are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EcdsaEncoding {
    /// `Ecdsa-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` (X9.62; CMS and X.509).
    Der,
    /// r‖s, each the field's size (BSI TR-03111; active authentication).
    Plain,
}

impl Curve {
    pub(crate) const ALL: [Curve; 5] = [
        Self::P256,
        Self::P384,
        Self::P521,
        Self::BrainpoolP256r1,
        Self::BrainpoolP384r1,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::P256 => "P-256",
            Self::P384 => "P-384",
            Self::P521 => "P-521",
            Self::BrainpoolP256r1 => "brainpoolP256r1",
            Self::BrainpoolP384r1 => "brainpoolP384r1",
        }
    }

    pub(crate) fn oid(self) -> ObjectIdentifier {
        match self {
            Self::P256 => oids::P256,
            Self::P384 => oids::P384,
            Self::P521 => oids::P521,
            Self::BrainpoolP256r1 => oids::BRAINPOOL_P256R1,
            Self::BrainpoolP384r1 => oids::BRAINPOOL_P384R1,
        }
    }

    /// The curve a `namedCurve` OID names; `Err` with a name for one this build lacks.
    pub(crate) fn named(oid: &ObjectIdentifier) -> Result<Self, String> {
        if let Some(curve) = Self::ALL.into_iter().find(|curve| curve.oid() == *oid) {
            return Ok(curve);
        }
        if *oid == oids::BRAINPOOL_P512R1 {
            return Err("brainpoolP512r1".to_owned());
        }
        Err(format!("curve {oid}"))
    }

    /// The size of a field element in bytes.
    pub(crate) fn field_len(self) -> usize {
        match self {
            Self::P256 | Self::BrainpoolP256r1 => 32,
            Self::P384 | Self::BrainpoolP384r1 => 48,
            Self::P521 => 66,
        }
    }

    /// The hash ICAO 9303-11 pairs with the key size when DG14 does not name one.
    pub(crate) fn default_hash(self) -> crate::algorithms::HashAlgorithm {
        use crate::algorithms::HashAlgorithm;
        match self {
            Self::P256 | Self::BrainpoolP256r1 => HashAlgorithm::Sha256,
            Self::P384 | Self::BrainpoolP384r1 => HashAlgorithm::Sha384,
            Self::P521 => HashAlgorithm::Sha512,
        }
    }

    fn domain(self) -> Domain {
        match self {
            Self::P256 => domain::<p256::NistP256>(),
            Self::P384 => domain::<p384::NistP384>(),
            Self::P521 => domain::<p521::NistP521>(),
            Self::BrainpoolP256r1 => domain::<bp256::BrainpoolP256r1>(),
            Self::BrainpoolP384r1 => domain::<bp384::BrainpoolP384r1>(),
        }
    }

    /// Verifies an ECDSA signature over `digest` (already hashed) by the SEC1 `point`.
    pub(crate) fn verify(
        self,
        point: &[u8],
        digest: &[u8],
        signature: &[u8],
        encoding: EcdsaEncoding,
    ) -> Result<(), EcError> {
        macro_rules! verify_with {
            ($curve:ty) => {{
                let key = ecdsa::VerifyingKey::<$curve>::from_sec1_bytes(point)
                    .map_err(|_| EcError::BadPoint)?;
                let signature = match encoding {
                    EcdsaEncoding::Der => ecdsa::Signature::<$curve>::from_der(signature),
                    EcdsaEncoding::Plain => ecdsa::Signature::<$curve>::from_slice(signature),
                }
                .map_err(|_| EcError::Invalid)?;
                key.verify_prehash(digest, &signature)
                    .map_err(|_| EcError::Invalid)
            }};
        }
        match self {
            Self::P256 => verify_with!(p256::NistP256),
            Self::P384 => verify_with!(p384::NistP384),
            Self::P521 => verify_with!(p521::NistP521),
            Self::BrainpoolP256r1 => verify_with!(bp256::BrainpoolP256r1),
            Self::BrainpoolP384r1 => verify_with!(bp384::BrainpoolP384r1),
        }
    }

    /// The explicit `ECParameters` of this curve (for fixtures that write keys the way many
    /// passports do).
    #[cfg(feature = "fixtures")]
    pub(crate) fn explicit_parameters(self) -> Vec<u8> {
        let d = self.domain();
        let integer = |bytes: &[u8]| {
            let trimmed: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
            let mut value = Vec::with_capacity(trimmed.len() + 1);
            if trimmed.first().is_some_and(|b| b & 0x80 != 0) {
                value.push(0);
            }
            value.extend(trimmed);
            tlv::encode(0x02, &value)
        };
        let oid = |oid: ObjectIdentifier| tlv::encode(0x06, oid.as_bytes());
        let field_id = tlv::encode(0x30, &[oid(oids::PRIME_FIELD), integer(&d.p)].concat());
        let curve = tlv::encode(
            0x30,
            &[tlv::encode(0x04, &d.a), tlv::encode(0x04, &d.b)].concat(),
        );
        let base = tlv::encode(0x04, &[&[0x04][..], &d.gx, &d.gy].concat());
        tlv::encode(
            0x30,
            &[
                integer(&[1]),
                field_id,
                curve,
                base,
                integer(&d.n),
                integer(&[1]),
            ]
            .concat(),
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EcError {
    BadPoint,
    Invalid,
}

/// A curve's domain parameters as big-endian bytes, for comparison.
#[derive(Debug, PartialEq, Eq)]
struct Domain {
    p: Vec<u8>,
    a: Vec<u8>,
    b: Vec<u8>,
    gx: Vec<u8>,
    gy: Vec<u8>,
    n: Vec<u8>,
}

fn domain<C: PrimeCurveParams>() -> Domain {
    let field = |element: &C::FieldElement| -> Vec<u8> { element.to_repr().to_vec() };
    let (gx, gy) = C::GENERATOR;
    // p is one more than the largest field element, -1.
    let minus_one = -C::FieldElement::ONE;
    let mut p = field(&minus_one);
    increment(&mut p);
    Domain {
        p,
        a: field(&C::EQUATION_A),
        b: field(&C::EQUATION_B),
        gx: field(&gx),
        gy: field(&gy),
        n: C::ORDER.as_ref().to_be_bytes().as_ref().to_vec(),
    }
}

fn increment(bytes: &mut [u8]) {
    for byte in bytes.iter_mut().rev() {
        let (sum, carry) = byte.overflowing_add(1);
        *byte = sum;
        if !carry {
            return;
        }
    }
}

fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

/// The curve whose explicit `ECParameters` (RFC 3279 §2.3.5) `parameters` spell out: every
/// value (prime, a, b, generator, order) must equal a known curve's.
pub(crate) fn identify_explicit(parameters: &[u8]) -> Result<Curve, String> {
    let malformed = |what: &str| format!("explicit curve parameters: {what}");
    let sequence = tlv::single(parameters, 0x30).map_err(|e| malformed(&e.to_string()))?;
    let mut fields = tlv::children(sequence.value);
    let mut next = |what: &str| -> Result<tlv::Tlv<'_>, String> {
        fields
            .next()
            .ok_or_else(|| malformed(what))?
            .map_err(|e| malformed(&e.to_string()))
    };
    let _version = next("version")?;
    let field_id = next("fieldID")?;
    let curve = next("curve")?;
    let base = next("base")?;
    let order = next("order")?;
    let mut field_parts = tlv::children(field_id.value);
    let field_type = field_parts
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| malformed("field type"))?;
    let prime = field_parts
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| malformed("prime"))?;
    if field_type.value != oids::PRIME_FIELD.as_bytes() {
        return Err("characteristic-two curves".to_owned());
    }
    let mut coefficients = tlv::children(curve.value);
    let a = coefficients
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| malformed("a"))?;
    let b = coefficients
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| malformed("b"))?;
    let point = base.value;
    for curve in Curve::ALL {
        let d = curve.domain();
        let len = curve.field_len();
        let generator = [&[0x04][..], &d.gx, &d.gy].concat();
        let generator_matches = point == generator.as_slice()
            || (point.len() == 1 + len && point[1..] == d.gx[..] && matches!(point[0], 2 | 3));
        if trim(prime.value) == trim(&d.p)
            && trim(a.value) == trim(&d.a)
            && trim(b.value) == trim(&d.b)
            && trim(order.value) == trim(&d.n)
            && generator_matches
        {
            return Ok(curve);
        }
    }
    Err("explicit parameters of an unknown curve".to_owned())
}
