//! Test PDFs, and the standard validators (poppler's `pdfsig` and `pdftotext`, pyHanko) run
//! over what the service returns.

pub use idconsent_e2e::pdf::{padded_pdf, pdf};

/// Bytes to flip in tamper checks: in the upload, in the appended update and in the trailer.
/// (The zero padding after the CMS inside `/Contents` is the one region validators ignore:
/// it is outside the signed ranges and after the DER's end.)
pub fn flipped_positions(document: &[u8], signed: &[u8]) -> [usize; 3] {
    [10, document.len() + 40, signed.len() - 30]
}

/// The text `pdftotext` (poppler-utils) extracts from `pdf`; `None` where it is not installed,
/// except under CI.
pub fn pdftotext(pdf: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("certificate.pdf");
    std::fs::write(&path, pdf).unwrap();
    match std::process::Command::new("pdftotext")
        .arg(&path)
        .arg("-")
        .output()
    {
        Ok(output) => Some(String::from_utf8_lossy(&output.stdout).into_owned()),
        Err(_) if std::env::var("CI").is_ok() => panic!("pdftotext is missing (poppler-utils)"),
        Err(_) => None,
    }
}

/// `pdfsig`'s report on `pdf` (poppler-utils; it exits 0 even on a digest mismatch, so the
/// text is what counts). `None` where it is not installed, except under CI, which installs it.
pub fn pdfsig(pdf: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("certificate.pdf");
    std::fs::write(&path, pdf).unwrap();
    match std::process::Command::new("pdfsig").arg(&path).output() {
        Ok(output) => Some(format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )),
        Err(_) if std::env::var("CI").is_ok() => panic!("pdfsig is missing (poppler-utils)"),
        Err(_) => None,
    }
}

/// pyHanko's validation of `pdf` trusting `trusted`: (success, report). `None` where it is not
/// installed, except under CI, which installs it.
pub fn pyhanko(pdf: &[u8], trusted: &std::path::Path) -> Option<(bool, String)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("certificate.pdf");
    std::fs::write(&path, pdf).unwrap();
    let output = std::process::Command::new("pyhanko")
        .args([
            "sign",
            "validate",
            "--pretty-print",
            "--trust-replace",
            "--trust",
        ])
        .arg(trusted)
        .arg(&path)
        .output();
    match output {
        Ok(output) => Some((
            output.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        )),
        Err(_) if std::env::var("CI").is_ok() => panic!("pyhanko is missing (pyhanko-cli)"),
        Err(_) => None,
    }
}
