//! JPEG quality from the luminance quantisation table: encoders scale the standard table
//! (ITU-T T.81 Annex K) by the quality setting, so the ratio gives the setting back.

/// The standard luminance table, in zig-zag order as it is stored in the file.
const STANDARD_LUMINANCE: [u16; 64] = [
    16, 11, 12, 14, 12, 10, 16, 14, 13, 14, 18, 17, 16, 19, 24, 40, 26, 24, 22, 22, 24, 49, 35, 37,
    29, 40, 58, 51, 61, 60, 57, 51, 56, 55, 64, 72, 92, 78, 64, 68, 87, 69, 55, 56, 80, 109, 81,
    87, 95, 98, 103, 104, 103, 62, 77, 113, 121, 112, 100, 120, 92, 101, 103, 99,
];

/// The quality (1–100) the first luminance table (id 0) was made with, or `None` when the file
/// has no readable table.
pub fn estimate_quality(bytes: &[u8]) -> Option<u8> {
    let table = luminance_table(bytes)?;
    let ratio: f64 = table
        .iter()
        .zip(STANDARD_LUMINANCE)
        .map(|(&q, standard)| f64::from(q) / f64::from(standard))
        .sum::<f64>()
        / 64.0;
    let scale = ratio * 100.0;
    let quality = if scale <= 100.0 {
        (200.0 - scale) / 2.0
    } else {
        5000.0 / scale
    };
    Some(quality.round().clamp(1.0, 100.0) as u8)
}

/// The 64 values of quantisation table 0, from the first DQT segment holding it.
fn luminance_table(bytes: &[u8]) -> Option<[u16; 64]> {
    let mut at = 2; // after SOI
    while at + 4 <= bytes.len() {
        if bytes[at] != 0xFF {
            return None;
        }
        let marker = bytes[at + 1];
        let length = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        let segment = bytes.get(at + 4..at + 2 + length)?;
        if marker == 0xDB {
            let mut rest = segment;
            while let Some((&info, tail)) = rest.split_first() {
                let wide = info >> 4 == 1;
                let size = if wide { 128 } else { 64 };
                let values = tail.get(..size)?;
                if info & 0x0F == 0 {
                    let mut table = [0u16; 64];
                    for (n, slot) in table.iter_mut().enumerate() {
                        *slot = if wide {
                            u16::from_be_bytes([values[2 * n], values[2 * n + 1]])
                        } else {
                            u16::from(values[n])
                        };
                    }
                    return Some(table);
                }
                rest = &tail[size..];
            }
        }
        // Entropy-coded data starts after SOS: no tables past it.
        if marker == 0xDA {
            return None;
        }
        at += 2 + length;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn jpeg(quality: u8) -> Vec<u8> {
        let image =
            image::RgbImage::from_fn(64, 64, |x, y| image::Rgb([x as u8 * 4, y as u8 * 4, 9]));
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
            .encode_image(&image)
            .unwrap();
        out
    }

    #[test]
    fn the_encoders_quality_comes_back() {
        for quality in [20, 50, 75, 90] {
            let estimated = estimate_quality(&jpeg(quality)).unwrap();
            assert!(
                estimated.abs_diff(quality) <= 2,
                "{quality} estimated as {estimated}"
            );
        }
    }

    #[test]
    fn other_bytes_have_no_quality() {
        assert_eq!(estimate_quality(b"\xFF\xD8\xFF"), None);
        assert_eq!(estimate_quality(b"not a jpeg at all"), None);
    }
}
