//! Valid test PDFs of any page count and size (signature tests and the load generator), and
//! hostile ones.

pub use idconsent_pdf_sign::fixtures::{deflate_bomb, object_stream_bomb};

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
