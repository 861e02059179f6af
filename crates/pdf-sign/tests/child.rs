//! The inspector and the certificate maker through real child processes: this binary is both
//! the tests and the worker they spawn, with the server's allocator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idconsent_kernel::id::{ApplicationId, SignatureRequestId, TypedId};
use idconsent_kernel::{EmailAddress, Environment, Timestamp};
use idconsent_pdf_sign::fixtures::{deflate_bomb, object_stream_bomb};
use idconsent_pdf_sign::{JOBS, LopdfInspector, PadesCertificateMaker, SigningIdentity};
use idconsent_signature::{
    CertificateMaker, Evidence, InspectError, PdfInspector, PdfRejection, RequestStatus,
    SignatureRequest, Signer, SignerStatus,
};
use idconsent_untrusted::{ChildPool, PoolSettings, worker};

#[global_allocator]
static ALLOCATOR: idconsent_allocator::MiMalloc = idconsent_allocator::MiMalloc;

fn pool() -> ChildPool {
    ChildPool::new(PoolSettings {
        worker: std::env::current_exe().unwrap(),
        memory_bytes: 256 << 20,
        timeout: Duration::from_secs(10),
        parallel: 2,
        queue_wait: Duration::from_secs(5),
        max_answer_bytes: 4 << 20,
    })
}

/// A valid PDF of `pages` pages (xref from real offsets).
fn pdf(pages: usize) -> Vec<u8> {
    let kids: Vec<String> = (0..pages).map(|n| format!("{} 0 R", 3 + n)).collect();
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        ),
    ];
    objects.extend(
        (0..pages).map(|_| "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>".to_owned()),
    );
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{object}\nendobj\n", index + 1).as_bytes());
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn completed(document: &[u8]) -> SignatureRequest {
    let email = EmailAddress::parse("ann@example.com").unwrap();
    let mut request = SignatureRequest {
        id: SignatureRequestId::from_trusted("sr_01CHILD".into()),
        application_id: ApplicationId::from_trusted("app_1".into()),
        environment: Environment::Sandbox,
        document_sha256: "00".repeat(32),
        document_size: document.len() as u64,
        document_pages: 2,
        signers: vec![Signer {
            email: email.clone(),
            name: "Ann".into(),
            status: SignerStatus::AwaitingSignature,
            decided_at: None,
            ip_address: None,
            biometric_verified: false,
        }],
        callback_url: None,
        require_biometric: false,
        status: RequestStatus::Pending,
        created_at: Timestamp::from_millis(1_764_000_000_000),
        expires_at: Timestamp::from_millis(1_764_100_000_000),
        completed_at: None,
        audit: Vec::new(),
        version: 0,
    };
    request.record_creation();
    request
        .sign(
            &email,
            &Evidence::default(),
            Timestamp::from_millis(1_764_000_100_000),
        )
        .unwrap();
    request
}

async fn the_inspector_reads_pages_in_a_child() {
    let inspector = LopdfInspector::new(pool());
    assert_eq!(inspector.inspect(&pdf(3)).await.unwrap().pages, 3);
    assert!(matches!(
        inspector.inspect(b"%PDF-1.7\nnot really").await,
        Err(InspectError::Rejected(PdfRejection::NotPdf))
    ));
    assert!(matches!(
        inspector.inspect(&pdf(0)).await,
        Err(InspectError::Rejected(PdfRejection::NoPages))
    ));
}

async fn hostile_pdfs_are_unreadable_within_the_bounds() {
    let inspector = LopdfInspector::new(pool());
    // 2 GiB for a parser that reads every index pair on its own; the child has 256 MiB.
    let started = Instant::now();
    let refused = inspector.inspect(&object_stream_bomb(2048, 1 << 20)).await;
    assert!(
        matches!(
            refused,
            Err(InspectError::Rejected(PdfRejection::Unreadable))
        ),
        "{refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let refused = inspector.inspect(&deflate_bomb(300 << 20)).await;
    assert!(
        matches!(
            refused,
            Err(InspectError::Rejected(PdfRejection::Unreadable))
        ),
        "{refused:?}"
    );
}

async fn the_certificate_is_made_in_a_child_and_signed_here() {
    let dir = tempfile::tempdir().unwrap();
    let identity = Arc::new(SigningIdentity::load_or_create_in(dir.path()).unwrap());
    let maker = PadesCertificateMaker::new(identity.clone(), pool());
    let original = pdf(2);
    let request = completed(&original);
    let signed = maker.certify(&original, &request).await.unwrap();
    let in_process =
        idconsent_pdf_sign::certify_in_process(&identity, &original, &request).unwrap();
    // The same update whichever process wrote it (only the signature's bytes may differ).
    assert_eq!(signed.len(), in_process.len());
    assert_eq!(&signed[..original.len()], &original[..]);
    let text = String::from_utf8_lossy(&signed[original.len()..]);
    let at = text.find("/ByteRange").expect("a signature dictionary");
    let range = &text[at..at + 60];
    assert!(
        !range.contains("9999999999"),
        "the byte range is filled in: {range}"
    );
    assert!(text.contains("ETSI.CAdES.detached"));

    // A hostile upload fails to certify (it could never have been accepted), and fast.
    let started = Instant::now();
    let bomb = object_stream_bomb(2048, 1 << 20);
    assert!(maker.certify(&bomb, &completed(&bomb)).await.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if worker::is_worker_invocation(&args) {
        return worker::main(&args, JOBS);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    macro_rules! run {
        ($($test:ident),*) => {$(
            eprint!("test {} ... ", stringify!($test));
            runtime.block_on($test());
            eprintln!("ok");
        )*};
    }
    run!(
        the_inspector_reads_pages_in_a_child,
        hostile_pdfs_are_unreadable_within_the_bounds,
        the_certificate_is_made_in_a_child_and_signed_here
    );
    ExitCode::SUCCESS
}
