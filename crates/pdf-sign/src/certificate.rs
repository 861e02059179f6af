//! The certificate PDF: one incremental update over the untouched upload that appends the
//! audit trail pages, so the original bytes stay a prefix of the result.

use async_trait::async_trait;
use idconsent_signature::{CertificateError, CertificateMaker, SignatureRequest};
use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, IncrementalDocument, Object, Stream, dictionary};

use crate::audit_page::{LINES_PER_PAGE, audit_lines};

#[derive(Debug, Clone, Copy, Default)]
pub struct LopdfCertificateMaker;

#[derive(Debug, thiserror::Error)]
enum MakeError {
    #[error(transparent)]
    Pdf(#[from] lopdf::Error),
    #[error(transparent)]
    Write(#[from] std::io::Error),
    #[error("the document has no page tree")]
    NoPageTree,
}

fn certificate_error(error: impl Into<MakeError>) -> CertificateError {
    CertificateError(Box::new(error.into()))
}

#[async_trait]
impl CertificateMaker for LopdfCertificateMaker {
    async fn certify(
        &self,
        original: &[u8],
        request: &SignatureRequest,
    ) -> Result<Vec<u8>, CertificateError> {
        append_audit_pages(original, request)
    }
}

/// `original` followed by an incremental update adding the audit pages at the end.
pub fn append_audit_pages(
    original: &[u8],
    request: &SignatureRequest,
) -> Result<Vec<u8>, CertificateError> {
    let previous = Document::load_mem(original).map_err(certificate_error)?;
    let pages_id = previous
        .catalog()
        .and_then(|catalog| catalog.get(b"Pages"))
        .and_then(Object::as_reference)
        .map_err(|_| certificate_error(MakeError::NoPageTree))?;
    let mut update = IncrementalDocument::create_from(original.to_vec(), previous);
    update
        .opt_clone_object_to_new_document(pages_id)
        .map_err(certificate_error)?;
    let document = &mut update.new_document;
    let font_id = document.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding",
    });
    let lines = audit_lines(request);
    let mut added = Vec::new();
    for chunk in lines.chunks(LINES_PER_PAGE) {
        let content = page_content(chunk);
        let content_id = document.add_object(Stream::new(
            Dictionary::new(),
            content.encode().map_err(certificate_error)?,
        ));
        let page_id = document.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            "Contents" => content_id,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
        });
        added.push(page_id);
    }
    let pages = document
        .get_object_mut(pages_id)
        .and_then(Object::as_dict_mut)
        .map_err(|_| certificate_error(MakeError::NoPageTree))?;
    let mut kids = pages
        .get(b"Kids")
        .and_then(Object::as_array)
        .cloned()
        .map_err(|_| certificate_error(MakeError::NoPageTree))?;
    let count = pages
        .get(b"Count")
        .and_then(Object::as_i64)
        .map_err(|_| certificate_error(MakeError::NoPageTree))?;
    kids.extend(added.iter().map(|id| Object::Reference(*id)));
    pages.set("Kids", kids);
    pages.set("Count", count + added.len() as i64);
    let mut out = Vec::with_capacity(original.len() + 16 * 1024);
    update.save_to(&mut out).map_err(certificate_error)?;
    Ok(out)
}

fn page_content(lines: &[String]) -> Content {
    let mut operations = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 10.into()]),
        Operation::new("TL", vec![14.into()]),
        Operation::new("Td", vec![50.into(), 792.into()]),
    ];
    for line in lines {
        operations.push(Operation::new(
            "Tj",
            vec![Object::String(win_ansi(line), lopdf::StringFormat::Literal)],
        ));
        operations.push(Operation::new("T*", vec![]));
    }
    operations.push(Operation::new("ET", vec![]));
    Content { operations }
}

/// The standard Helvetica prints Latin-1 only: other characters become `?` until the audit
/// page embeds a font (ADR 0015).
fn win_ansi(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match u8::try_from(u32::from(c)) {
            Ok(byte) if byte >= 0x20 && byte != 0x7f && !(0x80..0xa0).contains(&byte) => byte,
            _ => b'?',
        })
        .collect()
}
