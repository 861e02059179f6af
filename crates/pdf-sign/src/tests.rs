#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use der::Decode;
use idconsent_kernel::id::{ApplicationId, SignatureRequestId, TypedId};
use idconsent_kernel::{EmailAddress, Environment, Timestamp};
use idconsent_signature::{Evidence, RequestStatus, SignatureRequest, Signer, SignerStatus};
use lopdf::{Document, Object, Stream, dictionary};

use crate::certificate::certify;
use crate::identity::SigningIdentity;
use crate::inspect::inspect_pdf;
use crate::jobs::Rejection;

/// A PDF of `pages` pages, with an AcroForm holding one text field when `with_form`.
fn pdf(pages: usize, with_form: bool) -> Vec<u8> {
    let mut document = Document::with_version("1.7");
    let pages_id = document.new_object_id();
    let kids: Vec<Object> = (0..pages)
        .map(|_| {
            let content = document.add_object(Stream::new(dictionary! {}, b"".to_vec()));
            document
                .add_object(dictionary! {
                    "Type" => "Page",
                    "Parent" => pages_id,
                    "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
                    "Contents" => content,
                })
                .into()
        })
        .collect();
    document.objects.insert(
        pages_id,
        Object::Dictionary(
            dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => pages as i64 },
        ),
    );
    let mut catalog = dictionary! { "Type" => "Catalog", "Pages" => pages_id };
    if with_form {
        let field = document
            .add_object(dictionary! { "FT" => "Tx", "T" => Object::string_literal("existing") });
        catalog.set(
            "AcroForm",
            dictionary! { "Fields" => vec![Object::Reference(field)] },
        );
    }
    let catalog_id = document.add_object(catalog);
    document.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    document.save_to(&mut out).unwrap();
    out
}

fn completed_request(document: &[u8]) -> SignatureRequest {
    let email = EmailAddress::parse("zoya@example.com").unwrap();
    let mut request = SignatureRequest {
        id: SignatureRequestId::from_trusted("sr_01TEST".into()),
        application_id: ApplicationId::from_trusted("app_1".into()),
        environment: Environment::Sandbox,
        document_sha256: "00".repeat(32),
        document_size: document.len() as u64,
        document_pages: 1,
        signers: vec![Signer {
            email: email.clone(),
            name: "Зоя Петрова".into(),
            status: SignerStatus::AwaitingSignature,
            decided_at: None,
            ip_address: None,
            biometric_verified: false,
        }],
        callback_url: None,
        require_biometric: true,
        status: RequestStatus::Pending,
        created_at: Timestamp::from_millis(1_764_000_000_000),
        expires_at: Timestamp::from_millis(1_764_100_000_000),
        completed_at: None,
        audit: Vec::new(),
        version: 0,
    };
    request.record_creation();
    let evidence = Evidence {
        ip_address: Some("203.0.113.9".into()),
        user_agent: Some("Mozilla/5.0".into()),
        email_code_verified: true,
        biometric_verified: true,
        sandbox: false,
    };
    assert!(
        request
            .sign(&email, &evidence, Timestamp::from_millis(1_764_000_100_000))
            .unwrap()
    );
    request
}

fn identity() -> (tempfile::TempDir, Arc<SigningIdentity>) {
    let dir = tempfile::tempdir().unwrap();
    let identity = SigningIdentity::load_or_create_in(dir.path()).unwrap();
    (dir, Arc::new(identity))
}

#[test]
fn the_inspector_accepts_pdfs_and_refuses_the_rest() {
    assert_eq!(inspect_pdf(&pdf(3, false)), Ok(3));
    assert_eq!(inspect_pdf(b"hello"), Err(Rejection::NotPdf));
    assert_eq!(inspect_pdf(b"%PDF-1.7\nnot really"), Err(Rejection::NotPdf));
    assert_eq!(inspect_pdf(&pdf(0, false)), Err(Rejection::NoPages));
    let mut document = Document::load_mem(&pdf(1, false)).unwrap();
    let encrypt = document.add_object(dictionary! {
        "Filter" => "Standard", "V" => 1, "R" => 2, "P" => -4,
        "O" => Object::String(vec![1; 32], lopdf::StringFormat::Hexadecimal),
        "U" => Object::String(vec![2; 32], lopdf::StringFormat::Hexadecimal),
    });
    document.trailer.set("Encrypt", encrypt);
    document.trailer.set(
        "ID",
        vec![
            Object::String(vec![3; 16], lopdf::StringFormat::Hexadecimal),
            Object::String(vec![3; 16], lopdf::StringFormat::Hexadecimal),
        ],
    );
    let mut encrypted = Vec::new();
    document.save_to(&mut encrypted).unwrap();
    assert_eq!(inspect_pdf(&encrypted), Err(Rejection::Encrypted));
}

#[test]
fn the_certificate_extends_the_upload_and_signs_all_but_its_signature() {
    let (_dir, identity) = identity();
    let original = pdf(2, true);
    let request = completed_request(&original);
    let signed = certify(&identity, &original, &request).unwrap();
    assert_eq!(&signed[..original.len()], &original[..]);

    let document = Document::load_mem(&signed).unwrap();
    assert!(document.get_pages().len() > 2, "audit pages appended");
    let form = match document.catalog().unwrap().get(b"AcroForm").unwrap() {
        Object::Dictionary(form) => form.clone(),
        Object::Reference(id) => document.get_dictionary(*id).unwrap().clone(),
        other => panic!("AcroForm {other:?}"),
    };
    assert_eq!(form.get(b"SigFlags").unwrap().as_i64().unwrap(), 3);
    let fields = form.get(b"Fields").unwrap().as_array().unwrap();
    assert_eq!(fields.len(), 2, "the upload's field is kept, ours added");

    let widget = document
        .get_dictionary(fields[1].as_reference().unwrap())
        .unwrap();
    let signature = document
        .get_dictionary(widget.get(b"V").unwrap().as_reference().unwrap())
        .unwrap();
    assert_eq!(
        signature.get(b"SubFilter").unwrap().as_name().unwrap(),
        b"ETSI.CAdES.detached"
    );
    let ranges: Vec<i64> = signature
        .get(b"ByteRange")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_i64().unwrap())
        .collect();
    assert_eq!(ranges[0], 0);
    assert_eq!((ranges[2] + ranges[3]) as usize, signed.len(), "to the end");
    assert_eq!(signed[ranges[1] as usize], b'<');
    assert_eq!(signed[ranges[2] as usize - 1], b'>');
    let contents = signature.get(b"Contents").unwrap().as_str().unwrap();
    let cms = cms::content_info::ContentInfo::from_der(&contents[..der_len(contents)]).unwrap();
    assert_eq!(cms.content_type.to_string(), "1.2.840.113549.1.7.2");
    assert!(contents[der_len(contents)..].iter().all(|byte| *byte == 0));
}

/// The length of the DER element at the start of `der` (the rest is zero padding).
fn der_len(der: &[u8]) -> usize {
    if der[1] & 0x80 == 0 {
        return 2 + usize::from(der[1]);
    }
    let count = usize::from(der[1] & 0x7f);
    let content = der[2..2 + count]
        .iter()
        .fold(0usize, |length, byte| (length << 8) | usize::from(*byte));
    2 + count + content
}

#[test]
fn a_development_identity_is_made_once_and_a_foreign_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = SigningIdentity::load_or_create_in(dir.path()).unwrap();
    let again = SigningIdentity::load_or_create_in(dir.path()).unwrap();
    assert_eq!(
        first.certificate_pem().unwrap(),
        again.certificate_pem().unwrap()
    );
    let other = tempfile::tempdir().unwrap();
    SigningIdentity::load_or_create_in(other.path()).unwrap();
    let certificate = std::fs::read_to_string(dir.path().join("signing-cert.pem")).unwrap();
    let foreign_key = std::fs::read_to_string(other.path().join("signing-key.pem")).unwrap();
    assert!(matches!(
        SigningIdentity::from_pem(&certificate, &foreign_key),
        Err(crate::IdentityError::Mismatch)
    ));
}
