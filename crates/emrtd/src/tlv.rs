//! A BER-TLV reader for the LDS files (ICAO 9303-10): tags of up to three bytes, definite
//! lengths of up to four bytes, every length checked against the bytes left. It never recurses
//! and never allocates: it returns slices of its input, so a hostile length or nesting costs
//! nothing but the error.

/// One TLV: its tag (multi-byte tags as their big-endian bytes, `0x5F1F`), its value and its
/// whole encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tlv<'a> {
    pub tag: u32,
    pub value: &'a [u8],
    pub raw: &'a [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TlvError {
    #[error("truncated TLV")]
    Truncated,
    #[error("tag longer than three bytes")]
    LongTag,
    #[error("indefinite or over-long length")]
    BadLength,
    #[error("expected tag 0x{0:X}")]
    UnexpectedTag(u32),
    #[error("bytes after the TLV")]
    Trailing,
    #[error("missing tag 0x{0:X}")]
    Missing(u32),
}

/// Reads the first TLV of `input`; returns it and what follows.
pub(crate) fn read(input: &[u8]) -> Result<(Tlv<'_>, &[u8]), TlvError> {
    let (&first, _) = input.split_first().ok_or(TlvError::Truncated)?;
    let mut tag = u32::from(first);
    let mut at = 1;
    if first & 0x1F == 0x1F {
        loop {
            let byte = *input.get(at).ok_or(TlvError::Truncated)?;
            at += 1;
            if at > 3 {
                return Err(TlvError::LongTag);
            }
            tag = (tag << 8) | u32::from(byte);
            if byte & 0x80 == 0 {
                break;
            }
        }
    }
    let first_length = *input.get(at).ok_or(TlvError::Truncated)?;
    at += 1;
    let length = if first_length < 0x80 {
        usize::from(first_length)
    } else {
        let count = usize::from(first_length & 0x7F);
        if count == 0 || count > 4 {
            return Err(TlvError::BadLength);
        }
        let digits = input.get(at..at + count).ok_or(TlvError::Truncated)?;
        at += count;
        digits
            .iter()
            .fold(0usize, |acc, &digit| (acc << 8) | usize::from(digit))
    };
    let end = at.checked_add(length).ok_or(TlvError::Truncated)?;
    if end > input.len() {
        return Err(TlvError::Truncated);
    }
    Ok((
        Tlv {
            tag,
            value: &input[at..end],
            raw: &input[..end],
        },
        &input[end..],
    ))
}

/// `input` is exactly one TLV with `tag`.
pub(crate) fn single(input: &[u8], tag: u32) -> Result<Tlv<'_>, TlvError> {
    let (tlv, rest) = read(input)?;
    if tlv.tag != tag {
        return Err(TlvError::UnexpectedTag(tag));
    }
    if !rest.is_empty() {
        return Err(TlvError::Trailing);
    }
    Ok(tlv)
}

/// The TLVs one after another in `value`.
pub(crate) fn children(value: &[u8]) -> Children<'_> {
    Children { rest: value }
}

#[derive(Debug)]
pub(crate) struct Children<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Children<'a> {
    type Item = Result<Tlv<'a>, TlvError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match read(self.rest) {
            Ok((tlv, rest)) => {
                self.rest = rest;
                Some(Ok(tlv))
            }
            Err(error) => {
                self.rest = &[];
                Some(Err(error))
            }
        }
    }
}

/// The first child of `value` with `tag`, if any.
pub(crate) fn find(value: &[u8], tag: u32) -> Result<Option<Tlv<'_>>, TlvError> {
    for child in children(value) {
        let child = child?;
        if child.tag == tag {
            return Ok(Some(child));
        }
    }
    Ok(None)
}

/// The first child of `value` with `tag`.
pub(crate) fn require(value: &[u8], tag: u32) -> Result<Tlv<'_>, TlvError> {
    find(value, tag)?.ok_or(TlvError::Missing(tag))
}

/// The TLV encoding of `value` under a one- or two-byte `tag` (DER lengths).
#[cfg(any(test, feature = "fixtures"))]
pub(crate) fn encode(tag: u32, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 8);
    if tag > 0xFFFF {
        out.push((tag >> 16) as u8);
    }
    if tag > 0xFF {
        out.push((tag >> 8) as u8);
    }
    out.push(tag as u8);
    let length = value.len();
    if length < 0x80 {
        out.push(length as u8);
    } else {
        let bytes: Vec<u8> = length
            .to_be_bytes()
            .into_iter()
            .skip_while(|byte| *byte == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_multi_byte_tags_and_long_lengths() {
        let inner = encode(0x5F1F, &[b'P'; 200]);
        let outer = encode(0x61, &inner);
        let dg1 = single(&outer, 0x61).unwrap();
        let mrz = require(dg1.value, 0x5F1F).unwrap();
        assert_eq!(mrz.value.len(), 200);
        assert_eq!(mrz.raw, inner.as_slice());
    }

    #[test]
    fn hostile_lengths_and_tags_fail_without_reading_past_the_input() {
        assert_eq!(
            read(&[0x30, 0x84, 0x7F, 0xFF, 0xFF, 0xFF]),
            Err(TlvError::Truncated)
        );
        assert_eq!(
            read(&[0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF, 0]),
            Err(TlvError::Truncated)
        );
        assert_eq!(read(&[0x30, 0x85, 1, 0, 0, 0, 0]), Err(TlvError::BadLength));
        assert_eq!(read(&[0x30, 0x80, 0, 0]), Err(TlvError::BadLength));
        assert_eq!(
            read(&[0x5F, 0x81, 0x81, 0x01, 0x00]),
            Err(TlvError::LongTag)
        );
        assert_eq!(read(&[0x5F]), Err(TlvError::Truncated));
        assert_eq!(single(&[0x61, 0x00, 0x00], 0x61), Err(TlvError::Trailing));
    }
}
