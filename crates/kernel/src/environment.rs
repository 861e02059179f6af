//! Environments and consent intents: the two vocabularies every domain shares.

use std::fmt;

/// Where data lives: made with a `mk_test_` key it is `Sandbox`, with a `mk_live_` key `Live`,
/// and one never sees the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Environment {
    Sandbox,
    Live,
}

impl Environment {
    pub const ALL: [Environment; 2] = [Environment::Sandbox, Environment::Live];

    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Sandbox => "sandbox",
            Environment::Live => "live",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a consent session asks the user to approve (spec §1.3), also an application's
/// enabled request types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Intent {
    Login,
    Transaction,
    Signature,
    Oauth,
}

impl Intent {
    pub const ALL: [Intent; 4] = [
        Intent::Login,
        Intent::Transaction,
        Intent::Signature,
        Intent::Oauth,
    ];

    /// The wire form: `LOGIN`, `TRANSACTION`, `SIGNATURE`, `OAUTH`.
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Login => "LOGIN",
            Intent::Transaction => "TRANSACTION",
            Intent::Signature => "SIGNATURE",
            Intent::Oauth => "OAUTH",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.as_str() == text)
    }
}

impl fmt::Display for Intent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_forms_round_trip() {
        for intent in Intent::ALL {
            assert_eq!(Intent::parse(intent.as_str()), Some(intent));
        }
        assert_eq!(Intent::parse("login"), None);
        assert_eq!(Environment::parse("live"), Some(Environment::Live));
        assert_eq!(Environment::parse("production"), None);
    }
}
