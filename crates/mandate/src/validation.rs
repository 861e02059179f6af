//! Checks of what a merchant sends: recipients, terms, descriptions, and the fields of a PUT
//! against the stored terms. Each problem is pushed under its field; callers finish the errors.

use idconsent_approval::Recipient;
use idconsent_kernel::{Currency, DisplayText, EmailAddress, Money, PhoneNumber, ValidationErrors};

use crate::error::MandateError;
use crate::model::{Changes, Frequency, Terms};
use crate::service::ChangeMandate;

pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// A phone in E.164, or an email address (anything with an `@`).
pub(crate) fn check_recipient(errors: &mut ValidationErrors, text: &str) -> Option<Recipient> {
    let text = text.trim();
    let recipient = if text.contains('@') {
        EmailAddress::parse(text).ok().map(Recipient::Email)
    } else {
        PhoneNumber::parse(text).ok().map(Recipient::Phone)
    };
    if recipient.is_none() {
        errors.push(
            "recipient",
            "must be an E.164 phone number or an email address",
        );
    }
    recipient
}

pub(crate) fn check_description(errors: &mut ValidationErrors, text: &str) -> Option<String> {
    errors
        .check(
            "description",
            DisplayText::parse(text, MAX_DESCRIPTION_CHARS),
        )
        .map(DisplayText::into_string)
}

pub(crate) fn check_currency(
    errors: &mut ValidationErrors,
    text: Option<&str>,
) -> Option<Currency> {
    errors.check("currency", Currency::parse(text.unwrap_or("USD")))
}

/// A maximum amount is positive, with at most the currency's minor digits.
pub(crate) fn check_amount(
    errors: &mut ValidationErrors,
    text: &str,
    currency: Option<Currency>,
) -> Option<Money> {
    let currency = currency?;
    let amount = errors.check("amount", Money::from_major_decimal(text, currency))?;
    if amount.minor() == 0 {
        errors.push("amount", "must be > 0");
        return None;
    }
    Some(amount)
}

pub(crate) fn check_frequency(errors: &mut ValidationErrors, text: &str) -> Option<Frequency> {
    let frequency = Frequency::parse(text);
    if frequency.is_none() {
        errors.push("frequency", format!("must be {}", Frequency::choices()));
    }
    frequency
}

pub(crate) fn check_terms(
    errors: &mut ValidationErrors,
    amount: Option<&str>,
    currency: Option<&str>,
    frequency: Option<&str>,
) -> Option<Terms> {
    let currency = check_currency(errors, currency);
    let amount = match amount {
        Some(text) => Some(check_amount(errors, text, currency)?),
        None => None,
    };
    let frequency = match frequency {
        Some(text) => Some(check_frequency(errors, text)?),
        None => None,
    };
    Some(Terms {
        amount,
        currency: currency?,
        frequency,
    })
}

/// A PUT's fields against the stored terms: a new currency re-reads the amount in it (the stored
/// one when the PUT names none).
pub(crate) fn check_changes(
    input: &ChangeMandate,
    stored: &Terms,
) -> Result<Changes, MandateError> {
    let mut errors = ValidationErrors::new();
    if input.description.is_none()
        && input.amount.is_none()
        && input.currency.is_none()
        && input.frequency.is_none()
    {
        errors.push(
            "body",
            "name at least one of description, amount, currency, frequency",
        );
        return Err(errors.into());
    }
    let description = input
        .description
        .as_deref()
        .map(|text| check_description(&mut errors, text));
    let currency = match &input.currency {
        Some(text) => check_currency(&mut errors, Some(text)),
        None => Some(stored.currency),
    };
    let amount = match &input.amount {
        Some(Some(text)) => Some(check_amount(&mut errors, text, currency).map(Some)),
        Some(None) => Some(Some(None)),
        // The stored amount must still fit a new currency's minor digits.
        None if input.currency.is_some() => stored.amount.map(|amount| {
            let text = format!("{}", amount.major_f64());
            check_amount(&mut errors, &text, currency).map(Some)
        }),
        None => None,
    };
    let frequency = match &input.frequency {
        Some(Some(text)) => Some(check_frequency(&mut errors, text).map(Some)),
        Some(None) => Some(Some(None)),
        None => None,
    };
    errors
        .finish_with(|| {
            Some(Changes {
                description: match description {
                    Some(valid) => Some(valid?),
                    None => None,
                },
                amount: match amount {
                    Some(valid) => Some(valid?),
                    None => None,
                },
                currency: match &input.currency {
                    Some(_) => Some(currency?),
                    None => None,
                },
                frequency: match frequency {
                    Some(valid) => Some(valid?),
                    None => None,
                },
            })
        })
        .map_err(MandateError::from)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn terms_default_to_usd_and_refuse_zero_and_extra_digits() {
        let mut errors = ValidationErrors::new();
        let terms = check_terms(&mut errors, Some("49.90"), None, Some("monthly")).unwrap();
        assert!(errors.is_empty());
        assert_eq!(terms.currency.code(), "USD");
        assert_eq!(terms.amount.unwrap().minor(), 4_990);

        for (amount, currency) in [
            ("0", "USD"),
            ("1.001", "USD"),
            ("1.5", "JPY"),
            ("-3", "USD"),
        ] {
            let mut errors = ValidationErrors::new();
            assert!(check_terms(&mut errors, Some(amount), Some(currency), None).is_none());
            assert_eq!(errors.fields()[0].field, "amount", "{amount} {currency}");
        }
        let mut errors = ValidationErrors::new();
        assert!(check_terms(&mut errors, None, Some("usd"), Some("hourly")).is_none());
        let fields: Vec<&str> = errors.fields().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["currency", "frequency"]);
    }

    #[test]
    fn recipients_are_phones_or_emails() {
        let mut errors = ValidationErrors::new();
        assert!(matches!(
            check_recipient(&mut errors, "+15551234567"),
            Some(Recipient::Phone(_))
        ));
        assert!(matches!(
            check_recipient(&mut errors, "ann@example.com"),
            Some(Recipient::Email(_))
        ));
        assert!(errors.is_empty());
        assert!(check_recipient(&mut errors, "5551234567").is_none());
        assert!(check_recipient(&mut errors, "ann@").is_none());
        assert_eq!(errors.fields().len(), 2);
    }

    #[test]
    fn a_new_currency_must_fit_the_stored_amount() {
        let usd = Currency::parse("USD").unwrap();
        let stored = Terms {
            amount: Some(Money::from_minor(1_050, usd).unwrap()),
            currency: usd,
            frequency: None,
        };
        let to_yen = ChangeMandate {
            currency: Some("JPY".into()),
            ..ChangeMandate::default()
        };
        assert!(matches!(
            check_changes(&to_yen, &stored),
            Err(MandateError::Invalid(_))
        ));
        let to_euro = ChangeMandate {
            currency: Some("EUR".into()),
            ..ChangeMandate::default()
        };
        let changes = check_changes(&to_euro, &stored).unwrap();
        assert_eq!(changes.amount.unwrap().unwrap().minor(), 1_050);
        assert!(check_changes(&ChangeMandate::default(), &stored).is_err());
        let remove = ChangeMandate {
            amount: Some(None),
            frequency: Some(None),
            ..ChangeMandate::default()
        };
        let changes = check_changes(&remove, &stored).unwrap();
        assert_eq!(changes.amount, Some(None));
        assert_eq!(changes.frequency, Some(None));
    }
}
