#![doc = include_str!("../README.md")]

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use idconsent_approval::{
    AlsoFn, ApprovalTarget, ApprovedVia, Approver, Audience, Decision, Line, PurposeKind,
    Recipient, Shown, Target, TargetError, Words, amount,
};
use idconsent_kernel::{Currency, EmailAddress, Money, PhoneNumber};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The largest note file read: a note is a few fields.
const MAX_NOTE_BYTES: u64 = 16 * 1024;

/// The notes of a deployment, kept under `{data_dir}/example-notes`.
pub fn notes_in(data_dir: &Path) -> Arc<ExampleNotes> {
    Arc::new(ExampleNotes::in_dir(data_dir.join("example-notes")))
}

/// A note as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// An E.164 phone (decided in the app) or an email address (decided on the hosted page).
    pub recipient: String,
    pub title: String,
    /// In minor units of `currency`; none for a note without an amount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_minor: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default)]
    pub passkey_required: bool,
    /// `pending` until decided, then `approved` or `declined`.
    #[serde(default = "pending")]
    pub status: String,
    /// `app` or `hosted_page`, once decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
}

fn pending() -> String {
    "pending".to_owned()
}

/// The [`ApprovalTarget`] of notes.
#[derive(Debug)]
pub struct ExampleNotes {
    dir: PathBuf,
    /// One decision at a time: of two concurrent decisions exactly one succeeds.
    deciding: Mutex<()>,
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> TargetError {
    TargetError::Unavailable(Box::new(error))
}

impl ExampleNotes {
    /// The purpose kind this crate serves (`purpose.type`: `example`).
    pub const KIND: PurposeKind = PurposeKind::declared("example");

    pub fn in_dir(dir: PathBuf) -> Self {
        Self {
            dir,
            deciding: Mutex::new(()),
        }
    }

    /// The file of `id`; `NotFound` for anything but `ex_` and 1 to 64 ASCII letters or digits
    /// (no path is ever built from other bytes).
    fn path(&self, id: &str) -> Result<PathBuf, TargetError> {
        let well_formed = id.strip_prefix("ex_").is_some_and(|rest| {
            (1..=64).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric())
        });
        if !well_formed {
            return Err(TargetError::NotFound);
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// Writes a new note (what the e2e test and the README's "whoever asks" do).
    pub fn post(&self, id: &str, note: &Note) -> Result<(), TargetError> {
        let path = self.path(id)?;
        fs::create_dir_all(&self.dir).map_err(unavailable)?;
        write(&path, note)
    }

    pub fn read(&self, id: &str) -> Result<Note, TargetError> {
        let path = self.path(id)?;
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(TargetError::NotFound);
            }
            Err(error) => return Err(unavailable(error)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_NOTE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(unavailable)?;
        if bytes.len() as u64 > MAX_NOTE_BYTES {
            return Err(TargetError::NotFound);
        }
        // A file that is not a note is no note.
        serde_json::from_slice(&bytes).map_err(|_| TargetError::NotFound)
    }

    fn pending_note(&self, id: &str) -> Result<Note, TargetError> {
        let note = self.read(id)?;
        if note.status != "pending" {
            return Err(TargetError::NotPending(format!(
                "The note is {}",
                note.status
            )));
        }
        Ok(note)
    }
}

/// Replaces the file whole: a reader sees the old note or the new one.
fn write(path: &Path, note: &Note) -> Result<(), TargetError> {
    let bytes = serde_json::to_vec(note).map_err(unavailable)?;
    let partial = path.with_extension("json.partial");
    fs::write(&partial, bytes).map_err(unavailable)?;
    fs::rename(&partial, path).map_err(unavailable)
}

fn recipient(note: &Note) -> Result<Recipient, TargetError> {
    let parsed = if note.recipient.starts_with('+') {
        PhoneNumber::parse(&note.recipient)
            .ok()
            .map(Recipient::Phone)
    } else {
        EmailAddress::parse(&note.recipient)
            .ok()
            .map(Recipient::Email)
    };
    parsed.ok_or(TargetError::NotFound)
}

fn money(note: &Note) -> Option<Money> {
    let currency = Currency::parse(note.currency.as_deref()?).ok()?;
    Money::from_minor(note.amount_minor?, currency).ok()
}

fn shown(note: &Note) -> Shown {
    let mut lines = vec![Line::plain("title", note.title.clone())];
    if let Some(money) = money(note) {
        lines.push(Line::labelled("amount", "Amount", amount(&money)));
    }
    Shown {
        title: "Approve a note".into(),
        requester: None,
        lines,
        notes: vec![],
        words: Words::approve_or_decline("note"),
    }
}

fn context(id: &str, note: &Note) -> serde_json::Value {
    json!({
        "type": ExampleNotes::KIND.as_str(),
        "noteId": id,
        "title": note.title,
        "amount": money(note).map(|money| amount(&money)),
    })
}

fn context_hash(id: &str, note: &Note) -> String {
    idconsent_approval::commitment::context_hash(&context(id, note))
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[async_trait]
impl ApprovalTarget for ExampleNotes {
    fn kind(&self) -> PurposeKind {
        Self::KIND
    }

    async fn describe(&self, id: &str) -> Result<Target, TargetError> {
        let note = self.pending_note(id)?;
        Ok(Target {
            canonical_id: id.to_owned(),
            recipient: recipient(&note)?,
            context: context(id, &note),
            page: None,
            audience: None,
            shown: shown(&note),
            passkey_required: note.passkey_required,
        })
    }

    async fn audience(&self, id: &str) -> Result<Option<Audience>, TargetError> {
        self.read(id)?;
        Ok(None)
    }

    /// Notes have no audience: nobody hears of them, so `also` is never called.
    async fn decide(
        &self,
        id: &str,
        decision: Decision,
        by: &Approver,
        _also: &AlsoFn<'_>,
    ) -> Result<String, TargetError> {
        let _one_at_a_time = self.deciding.lock().unwrap_or_else(PoisonError::into_inner);
        let mut note = self.pending_note(id)?;
        if !by.is(&recipient(&note)?) {
            return Err(TargetError::NotFound);
        }
        if let Some(agreed) = &by.context_hash
            && *agreed != context_hash(id, &note)
        {
            return Err(TargetError::NotPending(
                "The note changed after it was shown".into(),
            ));
        }
        note.status = match decision {
            Decision::Approve => "approved",
            Decision::Reject => "declined",
        }
        .to_owned();
        note.decided_by = Some(
            match by.via {
                ApprovedVia::Device { .. } => "app",
                ApprovedVia::HostedPage { .. } => "hosted_page",
            }
            .to_owned(),
        );
        write(&self.path(id)?, &note)?;
        Ok(note.status)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn note(recipient: &str) -> Note {
        Note {
            recipient: recipient.into(),
            title: "Borrow the ladder".into(),
            amount_minor: Some(1250),
            currency: Some("EUR".into()),
            passkey_required: true,
            status: pending(),
            decided_by: None,
        }
    }

    fn on_page(email: &str) -> Approver {
        Approver {
            via: ApprovedVia::HostedPage {
                email: EmailAddress::parse(email).unwrap(),
                passkey: true,
                ip_address: None,
                user_agent: None,
            },
            context_hash: None,
        }
    }

    #[tokio::test]
    async fn a_note_is_shown_decided_once_and_only_by_its_recipient() {
        let dir = tempfile::tempdir().unwrap();
        let notes = notes_in(dir.path());
        notes.post("ex_1", &note("ann@example.com")).unwrap();

        let target = notes.describe("ex_1").await.unwrap();
        assert!(target.passkey_required);
        assert_eq!(target.shown.lines[1].value, "12.50 EUR");
        let page = notes.page("ex_1").await.unwrap();
        assert_eq!(page.hash, target.page_hash());
        assert_eq!(page.recipient.unwrap().as_str(), "ann@example.com");

        let none = &|_: &Audience| idconsent_approval::Effects::default();
        assert!(matches!(
            notes
                .decide("ex_1", Decision::Approve, &on_page("eve@example.com"), none)
                .await,
            Err(TargetError::NotFound)
        ));
        let mut stale = on_page("ann@example.com");
        stale.context_hash = Some("00".repeat(32));
        assert!(matches!(
            notes.decide("ex_1", Decision::Approve, &stale, none).await,
            Err(TargetError::NotPending(_))
        ));
        let decided = notes
            .decide("ex_1", Decision::Approve, &on_page("ann@example.com"), none)
            .await
            .unwrap();
        assert_eq!(decided, "approved");
        assert_eq!(
            notes.read("ex_1").unwrap().decided_by.as_deref(),
            Some("hosted_page")
        );
        assert!(matches!(
            notes
                .decide("ex_1", Decision::Reject, &on_page("ann@example.com"), none)
                .await,
            Err(TargetError::NotPending(_))
        ));
    }

    #[tokio::test]
    async fn ids_that_are_not_note_ids_name_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let notes = notes_in(dir.path());
        for id in [
            "",
            "ex_",
            "../ex_1",
            "ex_1/../../x",
            "ex_a.b",
            &format!("ex_{}", "a".repeat(65)),
        ] {
            assert!(
                matches!(notes.describe(id).await, Err(TargetError::NotFound)),
                "{id}"
            );
        }
        // A note for a phone has no hosted page.
        notes.post("ex_2", &note("+15551234567")).unwrap();
        assert!(matches!(
            notes.page("ex_2").await,
            Err(TargetError::NotFound)
        ));
        // A file that is not a note is no note.
        fs::write(dir.path().join("example-notes/ex_3.json"), b"{not json").unwrap();
        assert!(matches!(
            notes.describe("ex_3").await,
            Err(TargetError::NotFound)
        ));
    }
}
