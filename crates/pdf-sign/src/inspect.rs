//! Uploads are checked with the same parser that later extends them, so a document accepted
//! at creation can always be certified. The parse runs in a child process under the pool's
//! bounds ([`ChildPool`], docs/security.md "PDF parsing"), never in the server.

use async_trait::async_trait;
use idconsent_signature::{InspectError, PdfFacts, PdfInspector, PdfRejection};
use idconsent_untrusted::{ChildPool, RunError};
use lopdf::{DecompressError, Document, LoadOptions};

use crate::jobs::{INSPECT, InspectAnswer, Rejection};

#[derive(Debug, Clone)]
pub struct LopdfInspector {
    pool: ChildPool,
}

impl LopdfInspector {
    pub fn new(pool: ChildPool) -> Self {
        Self { pool }
    }
}

/// A PDF header may follow up to 1024 bytes of junk (ISO 32000-1 §7.5.2 tolerance readers keep).
fn has_pdf_header(bytes: &[u8]) -> bool {
    bytes.windows(5).take(1024).any(|window| window == b"%PDF-")
}

#[async_trait]
impl PdfInspector for LopdfInspector {
    async fn inspect(&self, bytes: &[u8]) -> Result<PdfFacts, InspectError> {
        // Not a PDF at all: no child needed to say so.
        if !has_pdf_header(bytes) {
            return Err(InspectError::Rejected(PdfRejection::NotPdf));
        }
        let answer = match self.pool.run(INSPECT, &[bytes]).await {
            Ok(answer) => answer,
            Err(error) if error.is_input_fault() => {
                return Err(InspectError::Rejected(PdfRejection::Unreadable));
            }
            Err(RunError::Busy { retry_after, .. }) => {
                return Err(InspectError::Busy {
                    retry_after_secs: retry_after.as_secs().max(1),
                });
            }
            Err(error) => return Err(InspectError::Unavailable(Box::new(error))),
        };
        match serde_json::from_slice::<InspectAnswer>(&answer) {
            Ok(InspectAnswer::Pages(pages)) => Ok(PdfFacts { pages }),
            Ok(InspectAnswer::Rejected(rejection)) => Err(InspectError::Rejected(rejection.into())),
            Err(error) => Err(InspectError::Unavailable(Box::new(error))),
        }
    }
}

/// The most a single stream may inflate to while a document loads: far above what object and
/// cross-reference streams need, well inside the child's memory, so that a deflate bomb is
/// refused as such rather than by whichever allocation fails first.
const MAX_STREAM_BYTES: usize = 64 << 20;

/// `bytes` parsed by lopdf within [`MAX_STREAM_BYTES`] per stream.
pub(crate) fn load(bytes: &[u8]) -> lopdf::Result<Document> {
    Document::load_mem_with_options(
        bytes,
        LoadOptions {
            max_decompressed_size: Some(MAX_STREAM_BYTES),
            ..LoadOptions::default()
        },
    )
}

/// The page count of an upload, or why it is refused. Parses: runs in the child.
pub(crate) fn inspect_pdf(bytes: &[u8]) -> Result<u32, Rejection> {
    if !has_pdf_header(bytes) {
        return Err(Rejection::NotPdf);
    }
    let document = match load(bytes) {
        Ok(document) => document,
        Err(lopdf::Error::Decompress(DecompressError::MemoryLimitExceeded { .. })) => {
            return Err(Rejection::Unreadable);
        }
        // lopdf tries an empty user password; a file it cannot open that way, or any
        // decryption failure, is encrypted as far as the signer is concerned.
        Err(lopdf::Error::Decryption(_)) | Err(lopdf::Error::InvalidPassword) => {
            return Err(Rejection::Encrypted);
        }
        Err(_) => return Err(Rejection::NotPdf),
    };
    if document.is_encrypted()
        || document.encryption_state.is_some()
        || document.trailer.get(b"Encrypt").is_ok()
    {
        return Err(Rejection::Encrypted);
    }
    let pages = u32::try_from(document.get_pages().len()).unwrap_or(u32::MAX);
    if pages == 0 {
        return Err(Rejection::NoPages);
    }
    Ok(pages)
}
