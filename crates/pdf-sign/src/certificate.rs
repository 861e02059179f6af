//! The certificate PDF: one incremental update over the untouched upload (its bytes stay a
//! prefix of the result) that appends the audit trail pages, an invisible signature field and
//! the AcroForm, then a PAdES signature over every byte but its own `/Contents`.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_signature::{CertificateError, CertificateMaker, SignatureRequest};
use idconsent_untrusted::{ChildPool, RunError};
use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, IncrementalDocument, Object, ObjectId, Stream, dictionary};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::audit_page::{LINES_PER_PAGE, audit_lines};
use crate::cms::signed_data;
use crate::font::EmbeddedFont;
use crate::identity::SigningIdentity;
use crate::jobs::{CERTIFY, CertifyAnswer, frame};

/// Room for the DER CMS in `/Contents` (hex doubles it in the file): a certificate chain of a
/// few KiB fits with margin.
const CONTENTS_BYTES: usize = 8192;
/// Ten digits per offset, written in place once the file is laid out.
const BYTE_RANGE_PLACEHOLDER: [i64; 4] = [0, 9_999_999_999, 9_999_999_999, 9_999_999_999];

/// Makes certificates signed by one identity. The upload is parsed and extended in a child
/// process ([`ChildPool`]); the digest and the signature are made here, so the key never
/// leaves this process and the child sees only the upload and the audit text.
#[derive(Debug, Clone)]
pub struct PadesCertificateMaker {
    identity: Arc<SigningIdentity>,
    pool: ChildPool,
}

impl PadesCertificateMaker {
    pub fn new(identity: Arc<SigningIdentity>, pool: ChildPool) -> Self {
        Self { identity, pool }
    }
}

/// The certificate of `request` over `original`, parsed on the calling thread: for trusted
/// documents only (benchmarks, tests).
pub fn certify_in_process(
    identity: &SigningIdentity,
    original: &[u8],
    request: &SignatureRequest,
) -> Result<Vec<u8>, CertificateError> {
    certify(identity, original, request).map_err(certificate_error)
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum MakeError {
    #[error(transparent)]
    Pdf(#[from] lopdf::Error),
    #[error(transparent)]
    Write(#[from] std::io::Error),
    #[error("the document has no page tree")]
    NoPageTree,
    #[error("the {0} placeholder is not in the update exactly once")]
    Placeholder(&'static str),
    #[error("the CMS signature ({0} bytes) does not fit its placeholder")]
    TooLarge(usize),
    #[error(transparent)]
    Cms(#[from] crate::cms::CmsError),
    #[error(transparent)]
    Font(#[from] crate::font::FontError),
    #[error("the update does not extend the upload")]
    NotAnExtension,
    #[error("the document parser: {0}")]
    Child(String),
}

fn certificate_error(error: impl Into<MakeError>) -> CertificateError {
    CertificateError::Failed(Box::new(error.into()))
}

/// What the child needs to write the update: the audit text and the signature dictionary's
/// words, made here from the request (trusted data).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditText {
    pub request_id: String,
    /// `D:YYYYMMDDHHmmSSZ`.
    pub date: String,
    pub lines: Vec<String>,
}

impl AuditText {
    pub(crate) fn of(request: &SignatureRequest) -> Self {
        Self {
            request_id: request.id.to_string(),
            date: pdf_date(request),
            lines: audit_lines(request),
        }
    }
}

#[async_trait]
impl CertificateMaker for PadesCertificateMaker {
    async fn certify(
        &self,
        original: &[u8],
        request: &SignatureRequest,
    ) -> Result<Vec<u8>, CertificateError> {
        let header = serde_json::to_vec(&AuditText::of(request))
            .map_err(|error| certificate_error(MakeError::Child(error.to_string())))?;
        let answer = match self.pool.run(CERTIFY, &[&frame(&header), original]).await {
            Ok(answer) => answer,
            Err(RunError::Busy { retry_after, .. }) => {
                return Err(CertificateError::Busy {
                    retry_after_secs: retry_after.as_secs().max(1),
                });
            }
            Err(error) => return Err(certificate_error(MakeError::Child(error.to_string()))),
        };
        let update = match serde_json::from_slice::<CertifyAnswer>(&answer) {
            Ok(CertifyAnswer::Update(update)) => BASE64
                .decode(update)
                .map_err(|error| certificate_error(MakeError::Child(error.to_string())))?,
            Ok(CertifyAnswer::Failed(reason)) => {
                return Err(certificate_error(MakeError::Child(reason)));
            }
            Err(error) => return Err(certificate_error(MakeError::Child(error.to_string()))),
        };
        let mut pdf = Vec::with_capacity(original.len() + update.len());
        pdf.extend_from_slice(original);
        pdf.extend_from_slice(&update);
        sign_in_place(&self.identity, &mut pdf, original.len()).map_err(certificate_error)?;
        Ok(pdf)
    }
}

/// The signed certificate of `request` over `original`, all in this process.
pub(crate) fn certify(
    identity: &SigningIdentity,
    original: &[u8],
    request: &SignatureRequest,
) -> Result<Vec<u8>, MakeError> {
    let mut pdf = original.to_vec();
    pdf.extend(update(original, &AuditText::of(request))?);
    sign_in_place(identity, &mut pdf, original.len())?;
    Ok(pdf)
}

/// The bytes that follow `original` in the certificate: the incremental update with the audit
/// pages, the signature field (its `/Contents` and `/ByteRange` placeholders) and the AcroForm.
/// Parses `original`: runs in the child.
pub(crate) fn update(original: &[u8], text: &AuditText) -> Result<Vec<u8>, MakeError> {
    let whole = incremental_update(original, text)?;
    match whole.strip_prefix(original) {
        Some(update) => Ok(update.to_vec()),
        None => Err(MakeError::NotAnExtension),
    }
}

/// `original` followed by the update: audit pages, signature field, AcroForm.
fn incremental_update(original: &[u8], text: &AuditText) -> Result<Vec<u8>, MakeError> {
    let previous = crate::inspect::load(original)?;
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

    let added = add_audit_pages(document, pages_id, &text.lines)?;
    let last_page = *added.last().ok_or(MakeError::NoPageTree)?;
    let signature_id = document.add_object(signature_dictionary(text));
    let widget_id = document.add_object(dictionary! {
        "Type" => "Annot",
        "Subtype" => "Widget",
        "FT" => "Sig",
        "T" => Object::string_literal(format!("Signature {}", text.request_id)),
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

fn signature_dictionary(text: &AuditText) -> Dictionary {
    dictionary! {
        "Type" => "Sig",
        "Filter" => "Adobe.PPKLite",
        "SubFilter" => "ETSI.CAdES.detached",
        "ByteRange" => BYTE_RANGE_PLACEHOLDER.iter().map(|n| Object::Integer(*n)).collect::<Vec<_>>(),
        "Contents" => Object::String(vec![0; CONTENTS_BYTES], lopdf::StringFormat::Hexadecimal),
        "M" => Object::string_literal(text.date.clone()),
        "Reason" => Object::string_literal(format!(
            "Every signer of {} signed; audit trail appended",
            text.request_id
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
    lines: &[String],
) -> Result<Vec<ObjectId>, MakeError> {
    let mut font = EmbeddedFont::dejavu_sans()?;
    let pages: Vec<Vec<u8>> = lines
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
/// the `<…>` of `/Contents`, whose CMS signs their SHA-256. The placeholders are looked for in
/// the update only (from `update_start`): the upload's bytes are never read here.
fn sign_in_place(
    identity: &SigningIdentity,
    pdf: &mut [u8],
    update_start: usize,
) -> Result<(), MakeError> {
    let update = pdf.get(update_start..).ok_or(MakeError::NotAnExtension)?;
    let contents = format!("<{}>", "0".repeat(2 * CONTENTS_BYTES));
    let contents_at = update_start + find_once(update, contents.as_bytes(), "/Contents")?;
    let contents_end = contents_at + contents.len();
    let placeholder = format!(
        "[{}]",
        BYTE_RANGE_PLACEHOLDER.map(|n| n.to_string()).join(" ")
    );
    let range_at = update_start + find_once(update, placeholder.as_bytes(), "/ByteRange")?;
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
