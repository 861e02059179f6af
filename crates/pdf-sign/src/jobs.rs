//! What the child process does with an upload ([`JOBS`]), and the answers it writes. Both
//! sides are here so that they cannot drift apart.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_signature::PdfRejection;
use idconsent_untrusted::Job;
use serde::{Deserialize, Serialize};

use crate::certificate::{AuditText, update};
use crate::inspect::inspect_pdf;

/// Reads an upload: pages, or why it is refused.
pub(crate) const INSPECT: &str = "pdf-inspect";
/// Writes the certificate's update over an upload (no signature: the parent signs).
pub(crate) const CERTIFY: &str = "pdf-certify";

/// The jobs a worker executable hands to `idconsent_untrusted::worker::main`.
pub const JOBS: &[Job] = &[
    Job {
        name: INSPECT,
        run: inspect_job,
    },
    Job {
        name: CERTIFY,
        run: certify_job,
    },
];

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum InspectAnswer {
    Pages(u32),
    Rejected(Rejection),
}

/// [`PdfRejection`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Rejection {
    NotPdf,
    Encrypted,
    NoPages,
    /// A stream inflates past the bound.
    Unreadable,
}

impl From<Rejection> for PdfRejection {
    fn from(rejection: Rejection) -> Self {
        match rejection {
            Rejection::NotPdf => PdfRejection::NotPdf,
            Rejection::Encrypted => PdfRejection::Encrypted,
            Rejection::NoPages => PdfRejection::NoPages,
            Rejection::Unreadable => PdfRejection::Unreadable,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum CertifyAnswer {
    /// Base64 of the bytes that follow the upload.
    Update(String),
    /// The upload parsed at creation but cannot be extended (no page tree, say).
    Failed(String),
}

fn inspect_job(input: &[u8]) -> Result<Vec<u8>, String> {
    let answer = match inspect_pdf(input) {
        Ok(pages) => InspectAnswer::Pages(pages),
        Err(rejection) => InspectAnswer::Rejected(rejection),
    };
    serde_json::to_vec(&answer).map_err(|error| error.to_string())
}

fn certify_job(input: &[u8]) -> Result<Vec<u8>, String> {
    let (header, original) = unframe(input).ok_or("the input frame is incomplete")?;
    let text: AuditText =
        serde_json::from_slice(header).map_err(|error| format!("the audit text: {error}"))?;
    let answer = match update(original, &text) {
        Ok(update) => CertifyAnswer::Update(BASE64.encode(update)),
        Err(error) => CertifyAnswer::Failed(error.to_string()),
    };
    serde_json::to_vec(&answer).map_err(|error| error.to_string())
}

/// `header`'s length (4 bytes, big-endian) then `header`; the payload follows it on stdin.
pub(crate) fn frame(header: &[u8]) -> Vec<u8> {
    let length = u32::try_from(header.len()).unwrap_or(u32::MAX);
    let mut framed = length.to_be_bytes().to_vec();
    framed.extend_from_slice(header);
    framed
}

/// The header and the payload of a framed input.
fn unframe(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let (length, rest) = input.split_first_chunk::<4>()?;
    let length = usize::try_from(u32::from_be_bytes(*length)).ok()?;
    (rest.len() >= length).then(|| rest.split_at(length))
}
