//! The certificate PDF: one incremental update over the untouched upload (its bytes stay a
//! prefix of the result) that appends the audit trail pages, an invisible signature field and
//! the AcroForm, then a PAdES signature over every byte but its own `/Contents`.

use std::sync::Arc;

use async_trait::async_trait;
use idconsent_signature::{CertificateError, CertificateMaker, SignatureRequest};
use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, IncrementalDocument, Object, ObjectId, Stream, dictionary};
use sha2::{Digest, Sha256};

use crate::audit_page::{LINES_PER_PAGE, audit_lines};
use crate::cms::signed_data;
use crate::font::EmbeddedFont;
use crate::identity::SigningIdentity;

/// Room for the DER CMS in `/Contents` (hex doubles it in the file): a certificate chain of a
/// few KiB fits with margin.
const CONTENTS_BYTES: usize = 8192;
/// Ten digits per offset, written in place once the file is laid out.
const BYTE_RANGE_PLACEHOLDER: [i64; 4] = [0, 9_999_999_999, 9_999_999_999, 9_999_999_999];

/// Makes certificates signed by one identity.
#[derive(Debug, Clone)]
pub struct PadesCertificateMaker {
    identity: Arc<SigningIdentity>,
}

impl PadesCertificateMaker {
    pub fn new(identity: Arc<SigningIdentity>) -> Self {
        Self { identity }
    }

    /// [`CertificateMaker::certify`] on the calling thread (benchmarks).
    pub fn certify_blocking(
        &self,
        original: &[u8],
        request: &SignatureRequest,
    ) -> Result<Vec<u8>, CertificateError> {
        certify(&self.identity, original, request).map_err(certificate_error)
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum MakeError {
    #[error(transparent)]
    Pdf(#[from] lopdf::Error),
    #[error(transparent)]
    Write(#[from] std::io::Error),
    #[error("the document has no page tree")]
    NoPageTree,
    #[error("the {0} placeholder is not in the file exactly once")]
    Placeholder(&'static str),
    #[error("the CMS signature ({0} bytes) does not fit its placeholder")]
    TooLarge(usize),
    #[error(transparent)]
    Cms(#[from] crate::cms::CmsError),
    #[error(transparent)]
    Font(#[from] crate::font::FontError),
}

fn certificate_error(error: impl Into<MakeError>) -> CertificateError {
    CertificateError(Box::new(error.into()))
}

#[async_trait]
impl CertificateMaker for PadesCertificateMaker {
    async fn certify(
        &self,
        original: &[u8],
        request: &SignatureRequest,
    ) -> Result<Vec<u8>, CertificateError> {
        certify(&self.identity, original, request).map_err(certificate_error)
    }
}

/// The signed certificate of `request` over `original`.
pub(crate) fn certify(
    identity: &SigningIdentity,
    original: &[u8],
    request: &SignatureRequest,
) -> Result<Vec<u8>, MakeError> {
    let mut pdf = incremental_update(original, request)?;
    sign_in_place(identity, &mut pdf)?;
    Ok(pdf)
}

/// `original` followed by the update: audit pages, signature field, AcroForm.
fn incremental_update(original: &[u8], request: &SignatureRequest) -> Result<Vec<u8>, MakeError> {
    let previous = Document::load_mem(original)?;
    let catalog_id = previous
        .trailer
        .get(b"Root")
        .and_then(Object::as_reference)
        .map_err(|_| MakeError::NoPageTree)?;
    let pages_id = previous
        .catalog()
        .and_then(|catalog| catalog.get(b"Pages"))
        .and_then(Object::as_reference)
        .map_err(|_| MakeError::NoPageTree)?;
    let mut update = IncrementalDocument::create_from(original.to_vec(), previous);
    update.opt_clone_object_to_new_document(pages_id)?;
    update.opt_clone_object_to_new_document(catalog_id)?;
    let existing_form = match update.get_prev_documents().catalog()?.get(b"AcroForm") {
        Ok(Object::Reference(id)) => Some(*id),
        _ => None,
    };
    if let Some(id) = existing_form {
        update.opt_clone_object_to_new_document(id)?;
    }
    let document = &mut update.new_document;

    let added = add_audit_pages(document, pages_id, request)?;
    let last_page = *added.last().ok_or(MakeError::NoPageTree)?;
    let signature_id = document.add_object(signature_dictionary(request));
    let widget_id = document.add_object(dictionary! {
        "Type" => "Annot",
        "Subtype" => "Widget",
        "FT" => "Sig",
        "T" => Object::string_literal(format!("Signature {}", request.id)),
        "V" => signature_id,
        // Invisible and printable: a zero rectangle, flags Print (4) + Locked (128).
        "Rect" => vec![0.into(), 0.into(), 0.into(), 0.into()],
        "F" => 132,
        "P" => last_page,
    });
    document
        .get_object_mut(last_page)
        .and_then(Object::as_dict_mut)?
        .set("Annots", vec![Object::Reference(widget_id)]);

    // Merge with any form the upload has: keep its fields, add ours, SigFlags 3
    // (signatures exist, append only).
    let form = match existing_form {
        Some(id) => document.get_object_mut(id).and_then(Object::as_dict_mut)?,
        None => {
            let catalog = document
                .get_object_mut(catalog_id)
                .and_then(Object::as_dict_mut)?;
            if !matches!(catalog.get(b"AcroForm"), Ok(Object::Dictionary(_))) {
                catalog.set("AcroForm", Dictionary::new());
            }
            catalog.get_mut(b"AcroForm").and_then(Object::as_dict_mut)?
        }
    };
    let mut fields = form
        .get(b"Fields")
        .and_then(Object::as_array)
        .cloned()
        .unwrap_or_default();
    fields.push(Object::Reference(widget_id));
    form.set("Fields", fields);
    form.set("SigFlags", 3);

    let mut out = Vec::with_capacity(original.len() + 32 * 1024);
    update.save_to(&mut out)?;
    Ok(out)
}

fn signature_dictionary(request: &SignatureRequest) -> Dictionary {
    dictionary! {
        "Type" => "Sig",
        "Filter" => "Adobe.PPKLite",
        "SubFilter" => "ETSI.CAdES.detached",
        "ByteRange" => BYTE_RANGE_PLACEHOLDER.iter().map(|n| Object::Integer(*n)).collect::<Vec<_>>(),
        "Contents" => Object::String(vec![0; CONTENTS_BYTES], lopdf::StringFormat::Hexadecimal),
        "M" => Object::string_literal(pdf_date(request)),
        "Reason" => Object::string_literal(format!(
            "Every signer of {} signed; audit trail appended",
            request.id
        )),
    }
}

/// `D:YYYYMMDDHHmmSSZ` of the completion (or creation) time.
fn pdf_date(request: &SignatureRequest) -> String {
    let at = request
        .completed_at
        .unwrap_or(request.created_at)
        .to_rfc3339();
    let digits: String = at.chars().filter(char::is_ascii_digit).take(14).collect();
    format!("D:{digits}Z")
}

fn add_audit_pages(
    document: &mut Document,
    pages_id: ObjectId,
    request: &SignatureRequest,
) -> Result<Vec<ObjectId>, MakeError> {
    let mut font = EmbeddedFont::dejavu_sans()?;
    let pages: Vec<Vec<u8>> = audit_lines(request)
        .chunks(LINES_PER_PAGE)
        .map(|chunk| page_content(&mut font, chunk).encode())
        .collect::<Result<_, _>>()?;
    let font_id = font.add_to(document)?;
    let mut added = Vec::new();
    for content in pages {
        let content_id = document.add_object(Stream::new(Dictionary::new(), content));
        added.push(document.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            "Contents" => content_id,
            "Resources" => dictionary! { "Font" => dictionary! { "F1" => font_id } },
        }));
    }
    let pages = document
        .get_object_mut(pages_id)
        .and_then(Object::as_dict_mut)
        .map_err(|_| MakeError::NoPageTree)?;
    let mut kids = pages
        .get(b"Kids")
        .and_then(Object::as_array)
        .cloned()
        .map_err(|_| MakeError::NoPageTree)?;
    let count = pages
        .get(b"Count")
        .and_then(Object::as_i64)
        .map_err(|_| MakeError::NoPageTree)?;
    kids.extend(added.iter().map(|id| Object::Reference(*id)));
    pages.set("Kids", kids);
    pages.set("Count", count + added.len() as i64);
    Ok(added)
}

/// The one place `needle` occurs in `haystack`, or an error naming `what`.
fn find_once(haystack: &[u8], needle: &[u8], what: &'static str) -> Result<usize, MakeError> {
    let mut found = haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, window)| *window == needle)
        .map(|(at, _)| at);
    match (found.next(), found.next()) {
        (Some(at), None) => Ok(at),
        _ => Err(MakeError::Placeholder(what)),
    }
}

/// Fills `/ByteRange` and `/Contents` of the laid-out file: the ranges cover everything but
/// the `<…>` of `/Contents`, whose CMS signs their SHA-256.
fn sign_in_place(identity: &SigningIdentity, pdf: &mut [u8]) -> Result<(), MakeError> {
    let contents = format!("<{}>", "0".repeat(2 * CONTENTS_BYTES));
    let contents_at = find_once(pdf, contents.as_bytes(), "/Contents")?;
    let contents_end = contents_at + contents.len();
    let placeholder = format!(
        "[{}]",
        BYTE_RANGE_PLACEHOLDER.map(|n| n.to_string()).join(" ")
    );
    let range_at = find_once(pdf, placeholder.as_bytes(), "/ByteRange")?;
    let ranges = format!(
        "[0 {contents_at} {contents_end} {}]",
        pdf.len() - contents_end
    );
    // Same width: pad inside the brackets with spaces.
    let padded = format!(
        "{}{}]",
        &ranges[..ranges.len() - 1],
        " ".repeat(placeholder.len() - ranges.len())
    );
    pdf[range_at..range_at + placeholder.len()].copy_from_slice(padded.as_bytes());

    let mut hasher = Sha256::new();
    hasher.update(&pdf[..contents_at]);
    hasher.update(&pdf[contents_end..]);
    let cms = signed_data(identity, &hasher.finalize().into())?;
    if cms.len() > CONTENTS_BYTES {
        return Err(MakeError::TooLarge(cms.len()));
    }
    let hex = hex::encode_upper(&cms);
    pdf[contents_at + 1..contents_at + 1 + hex.len()].copy_from_slice(hex.as_bytes());
    Ok(())
}

fn page_content(font: &mut EmbeddedFont, lines: &[String]) -> Content {
    let mut operations = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 10.into()]),
        Operation::new("TL", vec![14.into()]),
        Operation::new("Td", vec![50.into(), 792.into()]),
    ];
    for line in lines {
        operations.push(Operation::new(
            "Tj",
            vec![Object::String(
                font.encode(line),
                lopdf::StringFormat::Hexadecimal,
            )],
        ));
        operations.push(Operation::new("T*", vec![]));
    }
    operations.push(Operation::new("ET", vec![]));
    Content { operations }
}
