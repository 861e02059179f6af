//! The consent QR code: a PNG encoding `<scheme>://auth/<sessionId>`.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context as _, bail};

/// The text of the QR code in a PNG file (`-` reads standard input).
pub fn read_png(path: &Path) -> anyhow::Result<String> {
    let bytes = if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read the QR PNG from standard input")?;
        bytes
    } else {
        std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?
    };
    decode_png(&bytes)
}

/// The text of the first QR code found in a PNG.
pub fn decode_png(bytes: &[u8]) -> anyhow::Result<String> {
    let image = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
        .context("not a PNG image")?
        .to_luma8();
    let mut prepared = rqrr::PreparedImage::prepare(image);
    prepared
        .detect_grids()
        .iter()
        .find_map(|grid| grid.decode().ok().map(|(_, text)| text))
        .context("no readable QR code in the image")
}

/// The session id in a QR payload (`idconsent://auth/cs_…`, any app scheme) or given as is.
pub fn session_id(text: &str) -> anyhow::Result<String> {
    let text = text.trim();
    let id = match text.split_once("://") {
        Some((_scheme, rest)) => match rest.strip_prefix("auth/") {
            Some(id) => id.trim_end_matches('/'),
            None => {
                bail!("{text:?} is not a consent QR code (expected <scheme>://auth/<sessionId>)")
            }
        },
        None => text,
    };
    let plausible = !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !plausible {
        bail!("{id:?} is not a session id");
    }
    Ok(id.to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn payloads_and_bare_ids_give_the_session() {
        assert_eq!(session_id("idconsent://auth/cs_abc-1").unwrap(), "cs_abc-1");
        assert_eq!(session_id("myapp://auth/cs_abc\n").unwrap(), "cs_abc");
        assert_eq!(session_id("cs_abc").unwrap(), "cs_abc");
        assert!(session_id("idconsent://pay/cs_abc").is_err());
        assert!(session_id("idconsent://auth/../x").is_err());
        assert!(session_id("").is_err());
    }

    #[test]
    fn garbage_is_not_a_qr_code() {
        assert!(decode_png(b"not a png").is_err());
    }
}
