//! Test PDFs, and the standard validators (poppler's `pdfsig` and `pdftotext`, pyHanko) run
//! over what the service returns.

/// A small valid PDF with `pages` pages and the given extra trailer entries, its xref table
/// computed from the actual offsets.
pub fn pdf(pages: usize, trailer_extra: &str) -> Vec<u8> {
    padded_pdf(pages, trailer_extra, 0)
}

/// [`pdf`] with a comment of `padding` bytes after the header.
pub fn padded_pdf(pages: usize, trailer_extra: &str, padding: usize) -> Vec<u8> {
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            (0..pages)
                .map(|n| format!("{} 0 R", 3 + n))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    ];
    for _ in 0..pages {
        objects.push("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>".to_owned());
    }
    let mut out = b"%PDF-1.7\n".to_vec();
    if padding >= 2 {
        out.push(b'%');
        out.resize(out.len() + padding - 2, b'x');
        out.push(b'\n');
    }
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
            "trailer\n<< /Size {} /Root 1 0 R {trailer_extra} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

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
