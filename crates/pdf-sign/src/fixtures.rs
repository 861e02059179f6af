//! Hostile PDFs for tests (feature `fixtures`): small files that cost a naive parser gigabytes.

use std::io::Write;

use flate2::Compression;
use flate2::write::ZlibEncoder;

/// A PDF whose object stream lists `pairs` objects that all start at one offset, where a
/// literal string of `string_bytes` bytes sits. A parser that reads each listed object on its
/// own holds `pairs × string_bytes` bytes; the file is a few KiB because both the index and the
/// string compress to almost nothing.
pub fn object_stream_bomb(pairs: usize, string_bytes: usize) -> Vec<u8> {
    let mut index = String::with_capacity(pairs * 10);
    for n in 0..pairs {
        index.push_str(&format!("{} 0 ", 100 + n));
    }
    let mut content = index.into_bytes();
    let first = content.len();
    content.push(b'(');
    content.resize(content.len() + string_bytes, b'A');
    content.push(b')');
    let stream = zlib(&content);
    let dictionary = format!(
        "<< /Type /ObjStm /N {pairs} /First {first} /Filter /FlateDecode /Length {} >>",
        stream.len()
    );
    with_one_page(&[(dictionary.into_bytes(), Some(stream))])
}

/// A PDF with one FlateDecode object stream that inflates to `inflated_bytes` bytes of zeros.
pub fn deflate_bomb(inflated_bytes: usize) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
    let zeros = vec![b'0'; 1 << 20];
    let mut left = inflated_bytes;
    while left > 0 {
        let chunk = left.min(zeros.len());
        let _ = encoder.write_all(&zeros[..chunk]);
        left -= chunk;
    }
    let stream = encoder.finish().unwrap_or_default();
    let dictionary = format!(
        "<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length {} >>",
        stream.len()
    );
    with_one_page(&[(dictionary.into_bytes(), Some(stream))])
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

/// A valid one-page PDF (catalog 1, pages 2, page 3) followed by `extra` objects numbered from
/// 4, each a dictionary and optionally its stream, with a cross-reference table of the real
/// offsets.
fn with_one_page(extra: &[(Vec<u8>, Option<Vec<u8>>)]) -> Vec<u8> {
    let mut objects: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
        (b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(), None),
        (b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(), None),
        (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>".to_vec(),
            None,
        ),
    ];
    objects.extend(extra.iter().cloned());
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (number, (dictionary, stream)) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", number + 1).as_bytes());
        out.extend(dictionary);
        if let Some(stream) = stream {
            out.extend(b"\nstream\n");
            out.extend(stream);
            out.extend(b"\nendstream");
        }
        out.extend(b"\nendobj\n");
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
