//! Money: integer minor units with an ISO 4217 currency.

use std::fmt;

/// An ISO 4217 currency code with its number of minor-unit digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency {
    code: [u8; 3],
    exponent: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be an ISO 4217 currency code such as USD")]
pub struct UnknownCurrency;

impl Currency {
    pub fn parse(text: &str) -> Result<Self, UnknownCurrency> {
        let bytes: [u8; 3] = text.as_bytes().try_into().map_err(|_| UnknownCurrency)?;
        if !bytes.iter().all(u8::is_ascii_uppercase) {
            return Err(UnknownCurrency);
        }
        let exponent = if ZERO_DECIMALS.contains(&text) {
            0
        } else if THREE_DECIMALS.contains(&text) {
            3
        } else if FOUR_DECIMALS.contains(&text) {
            4
        } else if TWO_DECIMALS.contains(&text) {
            2
        } else {
            return Err(UnknownCurrency);
        };
        Ok(Self {
            code: bytes,
            exponent,
        })
    }

    pub fn code(&self) -> &str {
        // Only ASCII upper-case letters are ever stored.
        std::str::from_utf8(&self.code).unwrap_or("XXX")
    }

    /// Digits after the decimal point in the major unit (2 for USD, 0 for JPY, 3 for KWD).
    pub fn exponent(&self) -> u8 {
        self.exponent
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

const ZERO_DECIMALS: &[&str] = &[
    "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND",
    "VUV", "XAF", "XOF", "XPF",
];
const THREE_DECIMALS: &[&str] = &["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"];
const FOUR_DECIMALS: &[&str] = &["CLF", "UYW"];
const TWO_DECIMALS: &[&str] = &[
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF",
    "CHE", "CHF", "CHW", "CNY", "COP", "COU", "CRC", "CUP", "CVE", "CZK", "DKK", "DOP", "DZD",
    "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GTQ", "GYD",
    "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IRR", "JMD", "KES", "KGS", "KHR", "KPW",
    "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT",
    "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK",
    "NPR", "NZD", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "QAR", "RON", "RSD", "RUB", "SAR",
    "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP",
    "SZL", "THB", "TJS", "TMT", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "USD", "USN", "UYU",
    "UZS", "VED", "VES", "WST", "XCD", "XCG", "YER", "ZAR", "ZMW", "ZWG",
];

/// A non-negative amount in minor units (cents) of a currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Money {
    minor: i64,
    currency: Currency,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InvalidAmount {
    #[error("must be a number")]
    NotANumber,
    #[error("must be >= 0")]
    Negative,
    #[error("must have at most 2 decimal places")]
    TooPrecise,
    #[error("{0} has no minor units; use a whole number")]
    NoMinorUnits(&'static str),
    #[error("is too large")]
    TooLarge,
}

/// The largest accepted amount in major units; keeps every amount exact in an `f64` on the wire.
const MAX_MAJOR_DIGITS: usize = 12;

impl Money {
    pub fn from_minor(minor: i64, currency: Currency) -> Result<Self, InvalidAmount> {
        if minor < 0 {
            return Err(InvalidAmount::Negative);
        }
        Ok(Self { minor, currency })
    }

    /// Parses the decimal text of a JSON number in major units (`"19.99"`, `"0"`, `"1e2"`)
    /// exactly, without going through floating point. At most 2 decimal places are accepted,
    /// and none for currencies without minor units.
    pub fn from_major_decimal(text: &str, currency: Currency) -> Result<Self, InvalidAmount> {
        let decimal = Decimal::parse(text)?;
        if decimal.negative && decimal.digits.iter().any(|d| *d != 0) {
            return Err(InvalidAmount::Negative);
        }
        let fraction_digits = decimal.significant_fraction_digits();
        if fraction_digits > 2 {
            return Err(InvalidAmount::TooPrecise);
        }
        if fraction_digits > usize::from(currency.exponent) {
            return Err(InvalidAmount::NoMinorUnits(static_code(currency)));
        }
        if decimal.integer_digits() > MAX_MAJOR_DIGITS {
            return Err(InvalidAmount::TooLarge);
        }
        let minor = decimal
            .to_scaled(currency.exponent)
            .ok_or(InvalidAmount::TooLarge)?;
        Ok(Self { minor, currency })
    }

    pub fn minor(&self) -> i64 {
        self.minor
    }

    pub fn currency(&self) -> Currency {
        self.currency
    }

    /// The amount in major units, for the JSON `amount` field. Exact for every accepted amount.
    pub fn major_f64(&self) -> f64 {
        self.minor as f64 / 10f64.powi(i32::from(self.currency.exponent))
    }

    /// `19.99 USD`, for people.
    pub fn display(&self) -> String {
        let exponent = usize::from(self.currency.exponent);
        if exponent == 0 {
            return format!("{} {}", self.minor, self.currency);
        }
        let scale = 10i64.pow(u32::from(self.currency.exponent));
        format!(
            "{}.{:0width$} {}",
            self.minor / scale,
            self.minor % scale,
            self.currency,
            width = exponent
        )
    }
}

fn static_code(currency: Currency) -> &'static str {
    ZERO_DECIMALS
        .iter()
        .find(|code| **code == currency.code())
        .copied()
        .unwrap_or("this currency")
}

/// An exact decimal read from JSON number text: digits with the decimal point `scale` places
/// from the right.
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    scale: i64,
}

impl Decimal {
    fn parse(text: &str) -> Result<Self, InvalidAmount> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => {
                let exponent: i64 = rest[at + 1..]
                    .parse()
                    .map_err(|_| InvalidAmount::NotANumber)?;
                (&rest[..at], exponent)
            }
            None => (rest, 0),
        };
        let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if integer.is_empty()
            || !integer
                .bytes()
                .chain(fraction.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return Err(InvalidAmount::NotANumber);
        }
        if !(-40..=40).contains(&exponent) {
            return Err(if exponent > 0 {
                InvalidAmount::TooLarge
            } else {
                InvalidAmount::TooPrecise
            });
        }
        let digits = integer
            .bytes()
            .chain(fraction.bytes())
            .map(|b| b - b'0')
            .collect();
        let scale = fraction.len() as i64 - exponent;
        Ok(Self {
            negative,
            digits,
            scale,
        })
    }

    fn significant_fraction_digits(&self) -> usize {
        if self.scale <= 0 {
            return 0;
        }
        let trailing_zeros = self.digits.iter().rev().take_while(|d| **d == 0).count() as i64;
        (self.scale - trailing_zeros).max(0) as usize
    }

    fn integer_digits(&self) -> usize {
        let whole = self.digits.len() as i64 - self.scale;
        let leading_zeros = self.digits.iter().take_while(|d| **d == 0).count() as i64;
        (whole - leading_zeros).max(0) as usize
    }

    /// The value times 10^exponent as an integer; callers have checked it is whole and small.
    fn to_scaled(&self, exponent: u8) -> Option<i64> {
        let shift = i64::from(exponent) - self.scale;
        let mut value: i64 = 0;
        let kept = if shift >= 0 {
            self.digits.len()
        } else {
            (self.digits.len() as i64 + shift).max(0) as usize
        };
        for digit in &self.digits[..kept] {
            value = value.checked_mul(10)?.checked_add(i64::from(*digit))?;
        }
        for _ in 0..shift.max(0) {
            value = value.checked_mul(10)?;
        }
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn usd() -> Currency {
        Currency::parse("USD").unwrap()
    }

    #[test]
    fn currencies_are_upper_case_iso_codes() {
        assert_eq!(usd().exponent(), 2);
        assert_eq!(Currency::parse("JPY").unwrap().exponent(), 0);
        assert_eq!(Currency::parse("KWD").unwrap().exponent(), 3);
        for bad in ["usd", "US", "USDD", "ABC", "", "U$D"] {
            assert!(Currency::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn parses_major_units_exactly() {
        let cases = [
            ("0", 0),
            ("19.99", 1999),
            ("19.9", 1990),
            ("100.0", 10000),
            ("1e2", 10000),
            ("1.5E1", 1500),
            ("0.01", 1),
            ("19.990", 1999),
            ("-0", 0),
        ];
        for (text, minor) in cases {
            assert_eq!(
                Money::from_major_decimal(text, usd()).unwrap().minor(),
                minor,
                "{text}"
            );
        }
    }

    #[test]
    fn refuses_what_cannot_be_money() {
        assert_eq!(
            Money::from_major_decimal("-1", usd()),
            Err(InvalidAmount::Negative)
        );
        assert_eq!(
            Money::from_major_decimal("0.001", usd()),
            Err(InvalidAmount::TooPrecise)
        );
        assert_eq!(
            Money::from_major_decimal("1e-3", usd()),
            Err(InvalidAmount::TooPrecise)
        );
        assert_eq!(
            Money::from_major_decimal("1e300", usd()),
            Err(InvalidAmount::TooLarge)
        );
        assert_eq!(
            Money::from_major_decimal("1000000000000", usd()),
            Err(InvalidAmount::TooLarge)
        );
        assert_eq!(
            Money::from_major_decimal("1.5", Currency::parse("JPY").unwrap()),
            Err(InvalidAmount::NoMinorUnits("JPY"))
        );
        assert_eq!(
            Money::from_major_decimal("abc", usd()),
            Err(InvalidAmount::NotANumber)
        );
        assert_eq!(
            Money::from_major_decimal(".5", usd()),
            Err(InvalidAmount::NotANumber)
        );
    }

    #[test]
    fn three_decimal_currencies_scale_by_a_thousand() {
        let kwd = Currency::parse("KWD").unwrap();
        assert_eq!(
            Money::from_major_decimal("1.25", kwd).unwrap().minor(),
            1250
        );
    }

    #[test]
    fn displays_for_people() {
        assert_eq!(
            Money::from_minor(1999, usd()).unwrap().display(),
            "19.99 USD"
        );
        assert_eq!(Money::from_minor(5, usd()).unwrap().display(), "0.05 USD");
        let jpy = Currency::parse("JPY").unwrap();
        assert_eq!(Money::from_minor(500, jpy).unwrap().display(), "500 JPY");
    }

    proptest! {
        #[test]
        fn json_numbers_round_trip(cents in 0i64..100_000_000_000_000) {
            let money = Money::from_minor(cents, usd()).unwrap();
            let json = serde_json::to_string(&money.major_f64()).unwrap();
            prop_assert_eq!(Money::from_major_decimal(&json, usd()).unwrap(), money);
        }

        #[test]
        fn never_panics(text in "\\PC{0,40}") {
            let _ = Money::from_major_decimal(&text, usd());
        }
    }
}
