//! Uploads are checked with the same parser that later extends them, so a document accepted
//! at creation can always be certified.

use idconsent_signature::{PdfFacts, PdfInspector, PdfRejection};
use lopdf::Document;

#[derive(Debug, Clone, Copy, Default)]
pub struct LopdfInspector;

/// A PDF header may follow up to 1024 bytes of junk (ISO 32000-1 §7.5.2 tolerance readers keep).
fn has_pdf_header(bytes: &[u8]) -> bool {
    bytes.windows(5).take(1024).any(|window| window == b"%PDF-")
}

impl PdfInspector for LopdfInspector {
    fn inspect(&self, bytes: &[u8]) -> Result<PdfFacts, PdfRejection> {
        if !has_pdf_header(bytes) {
            return Err(PdfRejection::NotPdf);
        }
        let document = match Document::load_mem(bytes) {
            Ok(document) => document,
            // lopdf tries an empty user password; a file it cannot open that way, or any
            // decryption failure, is encrypted as far as the signer is concerned.
            Err(lopdf::Error::Decryption(_)) | Err(lopdf::Error::InvalidPassword) => {
                return Err(PdfRejection::Encrypted);
            }
            Err(_) => return Err(PdfRejection::NotPdf),
        };
        if document.is_encrypted()
            || document.encryption_state.is_some()
            || document.trailer.get(b"Encrypt").is_ok()
        {
            return Err(PdfRejection::Encrypted);
        }
        let pages = u32::try_from(document.get_pages().len()).unwrap_or(u32::MAX);
        if pages == 0 {
            return Err(PdfRejection::NoPages);
        }
        Ok(PdfFacts { pages })
    }
}
