//! Making a signed certificate for a completed request over a 1-page and a 50-page upload: the
//! incremental update, the embedded font and the CMS signature (docs/performance.md).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use idconsent_kernel::id::{ApplicationId, SignatureRequestId, TypedId};
use idconsent_kernel::{EmailAddress, Environment, Timestamp};
use idconsent_pdf_sign::{SigningIdentity, certify_in_process};
use idconsent_signature::{Evidence, RequestStatus, SignatureRequest, Signer, SignerStatus};
use lopdf::{Document, Object, Stream, dictionary};

fn pdf(pages: usize) -> Vec<u8> {
    let mut document = Document::with_version("1.7");
    let pages_id = document.new_object_id();
    let text = b"BT /F1 12 Tf 72 720 Td (A page of the contract) Tj ET".to_vec();
    let kids: Vec<Object> = (0..pages)
        .map(|_| {
            let content = document.add_object(Stream::new(dictionary! {}, text.clone()));
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
    let catalog = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    document.trailer.set("Root", catalog);
    let mut out = Vec::new();
    document.save_to(&mut out).unwrap();
    out
}

fn completed(document: &[u8], pages: u32) -> SignatureRequest {
    let signers: Vec<Signer> = (0..3)
        .map(|n| Signer {
            email: EmailAddress::parse(&format!("signer{n}@example.com")).unwrap(),
            name: format!("Signer Nº{n} Łukasz"),
            status: SignerStatus::AwaitingSignature,
            decided_at: None,
            ip_address: None,
            biometric_verified: false,
        })
        .collect();
    let mut request = SignatureRequest {
        id: SignatureRequestId::from_trusted("sr_01BENCH".into()),
        application_id: ApplicationId::from_trusted("app_1".into()),
        environment: Environment::Sandbox,
        document_sha256: "00".repeat(32),
        document_size: document.len() as u64,
        document_pages: pages,
        signers: signers.clone(),
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
        user_agent: Some("Mozilla/5.0 (iPhone)".into()),
        email_code_verified: true,
        biometric_verified: true,
        sandbox: false,
    };
    for signer in &signers {
        request
            .sign(
                &signer.email,
                &evidence,
                Timestamp::from_millis(1_764_000_100_000),
            )
            .unwrap();
    }
    request
}

fn certify(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let identity = SigningIdentity::load_or_create_in(dir.path()).unwrap();
    for pages in [1usize, 50] {
        let original = pdf(pages);
        let request = completed(&original, pages as u32);
        c.bench_function(&format!("certify {pages}-page PDF"), |b| {
            b.iter(|| certify_in_process(&identity, &original, &request).unwrap())
        });
    }
}

criterion_group!(benches, certify);
criterion_main!(benches);
