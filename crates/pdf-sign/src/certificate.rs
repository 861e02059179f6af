//! The certificate PDF: one incremental update over the untouched upload (its bytes stay a
//! prefix of the result) that appends the audit trail pages, an invisible signature field and
//! the AcroForm, then a PAdES signature over every byte but its own `/Contents`.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_signature::{
    CertificateError, CertificateMaker, SignatureRequest, TimestampAuthority,
};
use idconsent_untrusted::{ChildPool, RunError};
use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, IncrementalDocument, Object, ObjectId, Stream, dictionary};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::audit_page::{LINES_PER_PAGE, audit_lines};
use crate::cms::{add_timestamp, content_info, signature_digest, signer_info};
use crate::font::EmbeddedFont;
use crate::identity::SigningIdentity;
use crate::jobs::{CERTIFY, CertifyAnswer, frame};
use cms::signed_data::SignerInfo;

/// Room for the DER CMS in `/Contents` (hex doubles it in the file): the signing chain and,
/// for B-T, a time-stamp token with its authority's chain (a few KiB each) fit with margin.
const CONTENTS_BYTES: usize = 16384;
/// When trusted time is required and the authority does not answer, come back after this.
const TIMESTAMP_RETRY_SECS: u64 = 30;
/// Ten digits per offset, written in place once the file is laid out.
const BYTE_RANGE_PLACEHOLDER: [i64; 4] = [0, 9_999_999_999, 9_999_999_999, 9_999_999_999];

/// Makes certificates signed by one identity. The upload is parsed and extended in a child
/// process ([`ChildPool`]); the digest and the signature are made here, so the key never
/// leaves this process and the child sees only the upload and the audit text.
#[derive(Debug, Clone)]
pub struct PadesCertificateMaker {
    identity: Arc<SigningIdentity>,
    pool: ChildPool,
    trusted_time: Option<TrustedTime>,
}

/// PAdES B-T: the authority that stamps each signature, and whether a certificate may go out
/// without its stamp when the authority fails.
#[derive(Debug, Clone)]
pub struct TrustedTime {
    pub authority: Arc<dyn TimestampAuthority>,
    /// `true`: the certificate waits (503) until the authority answers. `false`: it is signed
    /// B-B and the audit page said beforehand that the stamp is best effort.
    pub required: bool,
}

impl PadesCertificateMaker {
    pub fn new(identity: Arc<SigningIdentity>, pool: ChildPool) -> Self {
        Self {
            identity,
            pool,
            trusted_time: None,
        }
    }

    /// Certificates carry an RFC 3161 time stamp (PAdES B-T).
    pub fn with_trusted_time(mut self, trusted_time: TrustedTime) -> Self {
        self.trusted_time = Some(trusted_time);
        self
    }

    /// The signer, stamped when trusted time is configured.
    async fn stamped_signer(&self, digest: &[u8; 32]) -> Result<SignerInfo, CertificateError> {
        let mut signer = signer_info(&self.identity, digest).map_err(certificate_error)?;
        let Some(trusted_time) = &self.trusted_time else {
            return Ok(signer);
        };
        match trusted_time
            .authority
            .timestamp(&signature_digest(&signer))
            .await
        {
            Ok(token) => add_timestamp(&mut signer, &token).map_err(certificate_error)?,
            Err(error) if trusted_time.required => {
                tracing::warn!(%error, "no time stamp: the certificate waits");
                return Err(CertificateError::TimestampPending {
                    retry_after_secs: TIMESTAMP_RETRY_SECS,
                    reason: error.to_string(),
                });
            }
            Err(error) => {
                tracing::warn!(%error, "no time stamp: signed without one (allowed by the operator)");
            }
        }
        Ok(signer)
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
    /// One more line at the end of the trail.
    fn with_line(mut self, line: String) -> Self {
        self.lines.push(String::new());
        self.lines.push(line);
        self
    }

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
        let text = AuditText::of(request).with_line(time_statement(self.trusted_time.as_ref()));
        let header = serde_json::to_vec(&text)
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
        let layout = lay_out(&mut pdf, original.len()).map_err(certificate_error)?;
        let signer = self.stamped_signer(&layout.digest).await?;
        let cms = content_info(&self.identity, signer).map_err(certificate_error)?;
        fill_contents(&mut pdf, &layout, &cms).map_err(certificate_error)?;
        Ok(pdf)
    }
}

/// The audit page's statement of how the signature's time is established.
fn time_statement(trusted_time: Option<&TrustedTime>) -> String {
    match trusted_time {
        None => "Signing time: the platform's clock (PAdES B-B, no trusted time stamp)".into(),
        Some(TrustedTime { required: true, .. }) => {
            "Signing time: an RFC 3161 time stamp on the signature (PAdES B-T)".into()
        }
        Some(TrustedTime {
            required: false, ..
        }) => "Signing time: an RFC 3161 time stamp when the authority answers; the operator \
               allows certificates without one (B-B)"
            .into(),
    }
}

/// The signed certificate of `request` over `original`, all in this process.
pub(crate) fn certify(
    identity: &SigningIdentity,
    original: &[u8],
    request: &SignatureRequest,
) -> Result<Vec<u8>, MakeError> {
    let mut pdf = original.to_vec();
    let text = AuditText::of(request).with_line(time_statement(None));
    pdf.extend(update(original, &text)?);
    let layout = lay_out(&mut pdf, original.len())?;
    let cms = content_info(identity, signer_info(identity, &layout.digest)?)?;
    fill_contents(&mut pdf, &layout, &cms)?;
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

/// Where the signature goes and what it signs.
struct Layout {
    contents_at: usize,
    /// SHA-256 of every byte but the `<…>` of `/Contents`.
    digest: [u8; 32],
}

/// Fills `/ByteRange` of the laid-out file: the ranges cover everything but the `<…>` of
/// `/Contents`, whose CMS signs their SHA-256. The placeholders are looked for in the update
/// only (from `update_start`): the upload's bytes are never read here.
fn lay_out(pdf: &mut [u8], update_start: usize) -> Result<Layout, MakeError> {
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
    Ok(Layout {
        contents_at,
        digest: hasher.finalize().into(),
    })
}

/// Writes the CMS into `/Contents` (hex, zero-padded).
fn fill_contents(pdf: &mut [u8], layout: &Layout, cms: &[u8]) -> Result<(), MakeError> {
    if cms.len() > CONTENTS_BYTES {
        return Err(MakeError::TooLarge(cms.len()));
    }
    let hex = hex::encode_upper(cms);
    let at = layout.contents_at + 1;
    pdf[at..at + hex.len()].copy_from_slice(hex.as_bytes());
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
