//! What a person is shown about an object before deciding, as its domain words it: a small
//! model with no markup and no purpose-specific fields, so one hosted page and one app screen
//! show every purpose (ADR 0040).

use idconsent_kernel::{EmailAddress, Money};
use serde::Serialize;

/// An object as a person reads it: a title, who asks, lines, notes, and the words of the
/// decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    /// `Authorise a direct debit`.
    pub title: String,
    /// Who asks: `Members · Gym Co`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    pub lines: Vec<Line>,
    /// Said under the lines, in smaller print (`Sandbox: nothing is charged.`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub words: Words,
}

/// One thing shown: a value, with a label unless it speaks for itself (a description).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Line {
    /// A stable name (`terms`): a page's element id, a test's handle. Lower-case letters, digits
    /// and `-`.
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub value: String,
}

impl Line {
    pub fn labelled(
        name: &'static str,
        label: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            name,
            label: Some(label.into()),
            value: value.into(),
        }
    }

    pub fn plain(name: &'static str, value: impl Into<String>) -> Self {
        Self {
            name,
            label: None,
            value: value.into(),
        }
    }
}

/// The words of the decision: the question, the two buttons, and what is said after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Words {
    /// `Do you authorise this mandate?`
    pub question: String,
    /// `Authorise`
    pub approve: String,
    /// `Decline`
    pub reject: String,
    /// `Mandate authorised.`
    pub approved: String,
    /// `Mandate declined.`
    pub declined: String,
}

impl Words {
    /// Plain words for a purpose that brings none of its own.
    pub fn approve_or_decline(what: &str) -> Self {
        Self {
            question: format!("Do you approve this {what}?"),
            approve: "Approve".into(),
            reject: "Decline".into(),
            approved: "Approved.".into(),
            declined: "Declined.".into(),
        }
    }
}

/// An amount as people write it: `120 EUR`, `49.90 EUR` — from integer minor units, never
/// through floating point.
pub fn amount(money: &Money) -> String {
    let currency = money.currency();
    let exponent = u32::from(currency.exponent());
    let scale = 10i64.pow(exponent);
    let (major, minor) = (money.minor() / scale, money.minor() % scale);
    if minor == 0 {
        format!("{major} {}", currency.code())
    } else {
        format!(
            "{major}.{minor:0width$} {}",
            currency.code(),
            width = exponent as usize
        )
    }
}

/// Who decides on a hosted page of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageVisitors {
    /// The object's own recipient: the page names them (masked) and the purpose id is the
    /// page's id.
    Recipient,
    /// Whoever the object names among several: the visitor types their address on the page,
    /// and the purpose they decide is `{page id}:{address}` (a signature request's signers).
    NameThemselves,
}

impl PageVisitors {
    /// The purpose id a visitor of the page at `page_id` decides; `None` when the kind needs
    /// the visitor's address and none was given.
    pub fn purpose_id(self, page_id: &str, address: Option<&str>) -> Option<String> {
        match self {
            PageVisitors::Recipient => Some(page_id.to_owned()),
            PageVisitors::NameThemselves => {
                let address = address.map(str::trim).filter(|a| !a.is_empty())?;
                Some(format!("{page_id}:{address}"))
            }
        }
    }
}

/// A hosted page of an object: what it shows before it knows who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub shown: Shown,
    /// The hash the page carries ([`crate::Target::page_hash`] of every purpose it decides).
    pub hash: String,
    /// Whether a decision on the page needs a passkey made and asserted in the browser.
    pub passkey_required: bool,
    /// The recipient the page addresses; `None` when visitors name themselves.
    pub recipient: Option<EmailAddress>,
    /// Whether a confirmed visitor can fetch a document ([`crate::ApprovalTarget::document`]).
    pub has_document: bool,
}

/// A file a confirmed visitor of a page may read (a PDF to sign).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub bytes: Vec<u8>,
    /// `application/pdf`
    pub media_type: &'static str,
    /// Offered to the browser (`sr_….pdf`).
    pub file_name: String,
}

#[cfg(test)]
mod tests {
    use idconsent_kernel::Currency;

    use super::*;

    fn money(minor: i64, code: &str) -> Money {
        Money::from_minor(minor, Currency::parse(code).unwrap()).unwrap()
    }

    #[test]
    fn amounts_are_written_from_minor_units() {
        assert_eq!(amount(&money(12_000, "EUR")), "120 EUR");
        assert_eq!(amount(&money(4_990, "EUR")), "49.90 EUR");
        assert_eq!(amount(&money(5, "GBP")), "0.05 GBP");
        assert_eq!(amount(&money(1_500, "JPY")), "1500 JPY");
        // 2^53 + 1 minor units: exact, where an f64 would round.
        assert_eq!(
            amount(&money(9_007_199_254_740_993, "USD")),
            "90071992547409.93 USD"
        );
    }

    #[test]
    fn visitors_who_name_themselves_decide_for_their_address() {
        let named = PageVisitors::NameThemselves;
        assert_eq!(
            named
                .purpose_id("sr_1", Some(" ann@example.com "))
                .as_deref(),
            Some("sr_1:ann@example.com")
        );
        assert_eq!(named.purpose_id("sr_1", None), None);
        assert_eq!(named.purpose_id("sr_1", Some("  ")), None);
        assert_eq!(
            PageVisitors::Recipient
                .purpose_id("md_1", Some("eve@example.com"))
                .as_deref(),
            Some("md_1")
        );
    }
}
