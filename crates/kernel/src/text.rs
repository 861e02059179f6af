//! Text that a person will read on an approval prompt: a description, a payee, a name.
//!
//! An approval is only as honest as what the user is shown. Besides control characters, some
//! invisible Unicode can make a prompt read differently from what was signed: bidirectional
//! overrides and isolates reorder text (`"Pay \u{202E}001$"` renders as "Pay $100"), and
//! zero-width characters hide inside words so two different strings look the same. Such text is
//! refused wherever it is accepted, not cleaned: a merchant should learn that their input was
//! wrong rather than see it silently changed.

use std::fmt;

/// Why a text was refused; the message reads well after a field name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {0} characters")]
    TooLong(usize),
    #[error("must not contain control characters")]
    Control,
    #[error("must not contain invisible or text-direction characters")]
    Invisible,
}

/// Trimmed, non-empty text of at most a given length, free of control, bidirectional-control and
/// zero-width characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DisplayText(String);

impl DisplayText {
    /// Trims `text` and checks it; `max_chars` counts Unicode scalar values.
    pub fn parse(text: &str, max_chars: usize) -> Result<Self, TextError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(TextError::Empty);
        }
        check_characters(trimmed)?;
        if trimmed.chars().count() > max_chars {
            return Err(TextError::TooLong(max_chars));
        }
        Ok(Self(trimmed.to_owned()))
    }

    /// Like [`DisplayText::parse`], but absent or blank text is `None`.
    pub fn parse_optional(text: Option<&str>, max_chars: usize) -> Result<Option<Self>, TextError> {
        match text.map(str::trim).filter(|t| !t.is_empty()) {
            None => Ok(None),
            Some(text) => Self::parse(text, max_chars).map(Some),
        }
    }

    /// Wraps a stored value without checking it (storage adapters only).
    pub fn from_trusted(text: String) -> Self {
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for DisplayText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for DisplayText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Refuses control characters and the invisible characters that can spoof a prompt.
pub fn check_characters(text: &str) -> Result<(), TextError> {
    for c in text.chars() {
        if c.is_control() {
            return Err(TextError::Control);
        }
        if is_invisible(c) {
            return Err(TextError::Invisible);
        }
    }
    Ok(())
}

/// Bidirectional controls (marks, embeddings, overrides, isolates), zero-width characters and
/// other default-ignorable characters that render as nothing.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'              // soft hyphen
        | '\u{034F}'            // combining grapheme joiner
        | '\u{061C}'            // Arabic letter mark
        | '\u{115F}' | '\u{1160}' // Hangul fillers
        | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' // Mongolian variation selectors and vowel separator
        | '\u{200B}'..='\u{200F}' // zero-width space/non-joiner/joiner, LRM, RLM
        | '\u{202A}'..='\u{202E}' // embeddings and overrides
        | '\u{2060}'..='\u{206F}' // word joiner, invisible operators, isolates, deprecated formats
        | '\u{3164}'            // Hangul filler
        | '\u{FE00}'..='\u{FE0F}' // variation selectors
        | '\u{FEFF}'            // zero-width no-break space (BOM)
        | '\u{FFA0}'            // halfwidth Hangul filler
        | '\u{FFF0}'..='\u{FFF8}'
        | '\u{1BCA0}'..='\u{1BCA3}' // shorthand format controls
        | '\u{1D173}'..='\u{1D17A}' // musical symbol formats
        | '\u{E0000}'..='\u{E0FFF}' // tags and variation selectors supplement
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ordinary_text_in_any_script_is_kept_trimmed() {
        for text in [
            "Order 42",
            "Café Zoë",
            "Łódź Sp. z o.o.",
            "山田太郎",
            "مرحبا",
            "Ünïcödé — ok",
        ] {
            assert_eq!(
                DisplayText::parse(&format!("  {text} "), 100)
                    .unwrap()
                    .as_str(),
                text
            );
        }
    }

    #[test]
    fn spoofing_characters_are_refused() {
        for text in [
            "Pay \u{202E}001$",
            "Garden\u{200B}Tools",
            "a\u{2066}b\u{2069}",
            "\u{FEFF}Shop",
            "x\u{200F}y",
            "tag\u{E0041}",
        ] {
            assert_eq!(
                DisplayText::parse(text, 100),
                Err(TextError::Invisible),
                "{text:?}"
            );
        }
        assert_eq!(
            DisplayText::parse("a\u{0007}b", 100),
            Err(TextError::Control)
        );
        assert_eq!(
            DisplayText::parse("line\nbreak", 100),
            Err(TextError::Control)
        );
    }

    #[test]
    fn length_and_emptiness() {
        assert_eq!(DisplayText::parse("   ", 5), Err(TextError::Empty));
        assert_eq!(DisplayText::parse("123456", 5), Err(TextError::TooLong(5)));
        assert!(DisplayText::parse("ééééé", 5).is_ok());
        assert_eq!(DisplayText::parse_optional(Some("  "), 5), Ok(None));
        assert_eq!(DisplayText::parse_optional(None, 5), Ok(None));
        assert!(DisplayText::parse_optional(Some("\u{202E}"), 5).is_err());
    }

    proptest! {
        #[test]
        fn accepted_text_never_holds_an_invisible_character(text in "\\PC{0,40}") {
            if let Ok(checked) = DisplayText::parse(&text, 40) {
                prop_assert!(!checked.as_str().chars().any(|c| c.is_control() || is_invisible(c)));
                prop_assert_eq!(checked.as_str(), text.trim());
            }
        }
    }
}
