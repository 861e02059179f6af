//! Which format `GET /v1/qr/:id/image` answers (CONTRACT §7): `?format=` if given, else the
//! best the `Accept` header allows, else the format the code was made with.

use idconsent_kernel::QrFormat;

/// `?format=` was neither `png` nor `svg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("format must be png or svg")]
pub struct FormatError;

/// The format to answer.
///
/// `Accept` is read as RFC 9110 says: media ranges with optional `q` (0–1, default 1);
/// `image/svg+xml` and `image/png` name a format, `image/*` and `*/*` both. The highest `q`
/// wins; a tie, or a range that allows both, keeps the stored format; `q=0` excludes. When
/// nothing in the header allows either format the stored one is answered anyway (an image is
/// all this route has; a browser asking for `text/html` still gets the code).
pub fn choose_format(
    query: Option<&str>,
    accept: Option<&str>,
    stored: QrFormat,
) -> Result<QrFormat, FormatError> {
    if let Some(query) = query {
        return QrFormat::parse(query.trim()).ok_or(FormatError);
    }
    let Some(accept) = accept else {
        return Ok(stored);
    };
    let (mut png, mut svg) = (None::<f32>, None::<f32>);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|param| param.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        // A more specific range overrides a wider one, whatever their order.
        let (for_png, for_svg, specific) = match media.as_str() {
            "image/png" => (true, false, true),
            "image/svg+xml" => (false, true, true),
            "image/*" | "*/*" => (true, true, false),
            _ => continue,
        };
        if for_png && (specific || png.is_none()) {
            png = Some(if specific { q } else { png.unwrap_or(q).max(q) });
        }
        if for_svg && (specific || svg.is_none()) {
            svg = Some(if specific { q } else { svg.unwrap_or(q).max(q) });
        }
    }
    let (png, svg) = (png.unwrap_or(0.0), svg.unwrap_or(0.0));
    Ok(if png == 0.0 && svg == 0.0 {
        stored
    } else if png > svg {
        QrFormat::Png
    } else if svg > png {
        QrFormat::Svg
    } else {
        stored
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use QrFormat::{Png, Svg};

    fn choose(accept: &str, stored: QrFormat) -> QrFormat {
        choose_format(None, Some(accept), stored).unwrap()
    }

    #[test]
    fn the_query_wins_and_must_be_known() {
        assert_eq!(choose_format(Some("svg"), Some("image/png"), Png), Ok(Svg));
        assert_eq!(choose_format(Some("gif"), None, Png), Err(FormatError));
        assert_eq!(choose_format(None, None, Svg), Ok(Svg));
    }

    #[test]
    fn accept_is_read_with_q_values() {
        assert_eq!(choose("image/svg+xml", Png), Svg);
        assert_eq!(choose("image/png", Svg), Png);
        assert_eq!(choose("image/png;q=0.5, image/svg+xml;q=0.9", Png), Svg);
        assert_eq!(choose("image/svg+xml;q=0.1,image/png", Svg), Png);
        // Equal preference keeps the stored format.
        assert_eq!(choose("image/png, image/svg+xml", Svg), Svg);
        assert_eq!(choose("*/*", Png), Png);
        assert_eq!(choose("image/*", Svg), Svg);
        // A browser's image Accept: svg named, the rest by wildcard at a lower q.
        assert_eq!(
            choose(
                "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
                Png
            ),
            Png,
            "image/* allows png at q=1 as well: a tie keeps the stored format"
        );
        // q=0 excludes, even under a wildcard.
        assert_eq!(choose("image/*, image/png;q=0", Png), Svg);
        assert_eq!(choose("image/png;q=0, */*", Png), Svg);
        // Nothing usable: the stored format.
        assert_eq!(choose("text/html", Svg), Svg);
        assert_eq!(choose("image/png;q=0, image/svg+xml;q=0", Png), Png);
    }
}
