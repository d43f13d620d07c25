//! The line-oriented formats (text lines, decimal integers) and binary little-endian u64 words.

use std::path::Path;

use bloomlanes_core::KeyType;

use super::keyset::{KeyKind, KeySetBuilder};
use crate::error::{Error, Location, Result};
use crate::key_text;

pub(super) fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, usize, &[u8])> {
    let mut start = 0usize;
    let mut line = 0u64;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let end = memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let mut l = &bytes[start..end];
        if l.last() == Some(&b'\r') {
            l = &l[..l.len() - 1];
        }
        let at = start;
        start = end + 1;
        line += 1;
        Some((line, at, l))
    })
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

pub(super) fn read_lines(bytes: &[u8], out: &mut KeySetBuilder) {
    for (_, _, l) in lines(bytes) {
        if !l.is_empty() {
            out.push_bytes(l, KeyKind::Text);
        }
    }
}

/// One key of type `key_type` per line, parsed by [`key_text`]; blank lines are skipped.
pub(super) fn read_typed(
    path: &Path,
    bytes: &[u8],
    key_type: KeyType,
    out: &mut KeySetBuilder,
) -> Result<()> {
    let mut scratch = Vec::new();
    for (line, at, l) in lines(bytes) {
        if l.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        scratch.clear();
        key_text::parse_into(key_type, l, &mut scratch).map_err(|e| {
            Error::input_with(
                path,
                Some(Location::LineByte(line, at as u64)),
                e.to_string(),
                e,
            )
        })?;
        out.push_typed(&scratch, key_type);
    }
    Ok(())
}

pub(super) fn read_u64(path: &Path, bytes: &[u8], out: &mut KeySetBuilder) -> Result<()> {
    let rem = bytes.len() % 8;
    if rem != 0 {
        return Err(Error::input(
            path,
            Some(Location::Byte((bytes.len() - rem) as u64)),
            format!(
                "{} bytes is not a whole number of 8-byte little-endian u64 keys ({rem} bytes left over)",
                bytes.len()
            ),
        ));
    }
    out.reserve_u64(bytes.len() / 8);
    for c in bytes.chunks_exact(8) {
        out.push_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_strip_cr_and_skip_empty() {
        let mut b = KeySetBuilder::default();
        read_lines(b"a\r\n\nb\nc", &mut b);
        let k = b.finish();
        assert_eq!(k.len(), 3);
        assert_eq!(k.display(0), "a");
    }
}
