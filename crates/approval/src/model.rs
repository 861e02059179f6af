//! Purposes, the objects they name as the user sees them, and decisions.

use std::borrow::Cow;
use std::fmt;

use idconsent_kernel::id::{ApplicationId, DeviceId};
use idconsent_kernel::{EmailAddress, Environment, PhoneNumber};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::shown::Shown;

/// What a FIDO challenge may be used for (`purpose.type` on the wire): a name declared by the
/// domain that serves it, as a constant on its approval target (`MandateApprovals::KIND`) — this
/// crate knows none of them, so a new approvable domain brings its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PurposeKind(Cow<'static, str>);

/// A purpose type that is not a lower-case word of at most 32 characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a purpose type: {0:?}")]
pub struct InvalidPurposeKind(pub String);

impl PurposeKind {
    /// A domain's purpose kind: lower-case ASCII letters and `_`.
    pub const fn declared(name: &'static str) -> Self {
        Self(Cow::Borrowed(name))
    }

    /// A kind named by a client or read back from storage: lower-case ASCII letters and `_`,
    /// 1 to 32 of them. Whether anything serves it is the registry's question.
    pub fn named(name: &str) -> Result<Self, InvalidPurposeKind> {
        let well_formed = (1..=32).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        if well_formed {
            Ok(Self(Cow::Owned(name.to_owned())))
        } else {
            Err(InvalidPurposeKind(name.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PurposeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a challenge is for: a kind and, except for registration and login, the object's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Purpose {
    pub kind: PurposeKind,
    pub id: Option<String>,
}

impl Purpose {
    pub fn new(kind: PurposeKind, id: impl Into<String>) -> Self {
        Self {
            kind,
            id: Some(id.into()),
        }
    }
}

/// `{"type": "consent", "id": "cs_…"}` (`id` is `null` for `login`), as events and API bodies
/// name a purpose.
impl Serialize for Purpose {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut purpose = serializer.serialize_struct("Purpose", 2)?;
        purpose.serialize_field("type", self.kind.as_str())?;
        purpose.serialize_field("id", &self.id)?;
        purpose.end()
    }
}

/// The application an object belongs to: its events go there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audience {
    pub application_id: ApplicationId,
    pub environment: Environment,
    pub callback_url: String,
}

/// Who may decide an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipient {
    /// An enrolled phone: decided in the app with one of its passkeys.
    Phone(PhoneNumber),
    /// An email address: decided on a hosted page, never through the app.
    Email(EmailAddress),
}

impl Recipient {
    pub fn phone(&self) -> Option<&PhoneNumber> {
        match self {
            Recipient::Phone(phone) => Some(phone),
            Recipient::Email(_) => None,
        }
    }
}

/// An object a purpose names, as its recipient must see it before deciding.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The purpose id in the object's own spelling, whatever spelling named it (a signature
    /// request's signer as the request names them): what limits per object and recipient are
    /// counted under.
    pub canonical_id: String,
    /// Only this recipient may decide.
    pub recipient: Recipient,
    /// Exactly what the app shows; the FIDO challenge commits to its canonical hash.
    pub context: Value,
    /// What a hosted page of the object shows before it knows who is asking, when that is not
    /// `context` (a signature request's one page serves all its signers). See [`Target::page_hash`].
    pub page: Option<Value>,
    /// Who hears about assertions for it (`auth.success`, `auth.failed`).
    pub audience: Option<Audience>,
    /// What a person reads before deciding, worded by the domain (the app and the hosted page
    /// show this; `context` is what the passkey commits to).
    pub shown: Shown,
    /// Whether deciding needs a passkey's assertion: a domain rule (a mandate always; a
    /// signature when its request requires biometrics). In the app the assertion is the
    /// decision, so it always has one.
    pub passkey_required: bool,
}

impl Target {
    /// Hex SHA-256 of what a page of the object shows (`page`, else `context`), canonical JSON
    /// as for challenges: a page carries it, and a decision made on a page that showed
    /// something else is refused.
    pub fn page_hash(&self) -> String {
        hex_hash(self.page.as_ref().unwrap_or(&self.context))
    }

    /// Hex SHA-256 of `context` (what a challenge commits to).
    pub fn context_hash(&self) -> String {
        hex_hash(&self.context)
    }
}

fn hex_hash(value: &Value) -> String {
    crate::commitment::context_hash(value)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The recipient's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject,
}

/// Who decided, and how they proved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approver {
    pub via: ApprovedVia,
    /// Hex SHA-256 of the context the approver agreed to: the one the passkey's challenge
    /// committed to, or — on a hosted page without a passkey — the one the page was checked
    /// against when the decision was made. A target refuses the decision when the object's
    /// context now hashes differently (a mandate's PUT meanwhile).
    pub context_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovedVia {
    /// In the app: an assertion by an enrolled device's passkey.
    Device {
        device_id: DeviceId,
        phone: PhoneNumber,
    },
    /// On a hosted page: the address confirmed with an emailed code, then (when `passkey`) an
    /// assertion by a passkey made in the browser for this decision.
    HostedPage {
        email: EmailAddress,
        passkey: bool,
        ip_address: Option<String>,
        user_agent: Option<String>,
    },
}

impl Approver {
    /// The deciding device, for decisions made in the app.
    pub fn device(&self) -> Option<(&DeviceId, &PhoneNumber)> {
        match &self.via {
            ApprovedVia::Device { device_id, phone } => Some((device_id, phone)),
            ApprovedVia::HostedPage { .. } => None,
        }
    }

    /// Whether the approver is `recipient`: its phone in the app, its address on a hosted page.
    pub fn is(&self, recipient: &Recipient) -> bool {
        match (&self.via, recipient) {
            (ApprovedVia::Device { phone, .. }, Recipient::Phone(expected)) => phone == expected,
            (ApprovedVia::HostedPage { email, .. }, Recipient::Email(expected)) => {
                email.as_str().eq_ignore_ascii_case(expected.as_str())
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_purpose_is_its_type_and_id() {
        let consent = Purpose::new(PurposeKind::declared("consent"), "cs_1");
        assert_eq!(
            serde_json::to_string(&consent).unwrap(),
            r#"{"type":"consent","id":"cs_1"}"#
        );
        let login = Purpose {
            kind: PurposeKind::declared("login"),
            id: None,
        };
        assert_eq!(
            serde_json::to_string(&login).unwrap(),
            r#"{"type":"login","id":null}"#
        );
    }
}
