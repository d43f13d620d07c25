//! What `--format auto` refuses to guess: a compressed, Parquet or binary file is never read as
//! text lines; text whose every line looks like a number is hashed as text (key type `bytes`,
//! which the filter records, so a later query of numbers is refused rather than answered
//! "absent") with a warning that says how to hash them as numbers (`--key-type`).

use std::path::Path;

use crate::error::{Error, Location, Result};
use crate::key_text::looks_numeric;

/// How much of a file is looked at to decide that it is binary.
const SNIFF_BYTES: usize = 64 * 1024;
/// How many values are looked at to decide that they are all numbers.
pub(super) const NUMERIC_SAMPLE: usize = 10_000;

/// What to do with a file of each kind [`container_magic`] names, instead of reading it as text.
const DECOMPRESS: &str = "decompress it first, e.g. `zcat FILE | bloomlanes … -`";
const UNZIP: &str = "unpack it first, e.g. `unzip -p FILE | bloomlanes … -`";
const PARQUET: &str = "to use a column's values as keys, write the columns out as CSV first, \
    e.g. with DuckDB: `COPY (SELECT key, label FROM 'FILE') TO 'keys.csv'`; its own bloom \
    filters are read by `bloomlanes import` and `bloomlanes parquet probe`";
const FILTER: &str = "give it where a command takes its filter, as in `bloomlanes query FILTER \
    KEYS`, not as keys";

/// The compressed or container format named by the first bytes, if any, with what to do
/// instead of reading it as text.
pub(super) fn container_magic(b: &[u8]) -> Option<(&'static str, &'static str)> {
    let magics: [(&[u8], &str, &str); 7] = [
        (&[0x1f, 0x8b], "gzip-compressed", DECOMPRESS),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd-compressed", DECOMPRESS),
        (
            &[0xfd, b'7', b'z', b'X', b'Z', 0x00],
            "xz-compressed",
            DECOMPRESS,
        ),
        (&[0x04, 0x22, 0x4d, 0x18], "lz4-compressed", DECOMPRESS),
        (b"PK\x03\x04", "a zip archive", UNZIP),
        (b"PAR1", "a Parquet file", PARQUET),
        (b"BLMLANES", "a bloomlanes filter file", FILTER),
    ];
    if b.len() >= 10
        && b.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&b[3])
        && b[4..10] == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
    {
        return Some(("bzip2-compressed", DECOMPRESS));
    }
    magics
        .iter()
        .find(|(m, _, _)| b.starts_with(m))
        .map(|&(_, name, instead)| (name, instead))
}

/// Refuses a compressed or container file read as text (any text format).
pub(super) fn refuse_container(path: &Path, bytes: &[u8], as_what: &str) -> Result<()> {
    if let Some((what, instead)) = container_magic(bytes) {
        return Err(Error::input(
            path,
            Some(Location::Byte(0)),
            format!("is {what}, not {as_what}, and is not read as text: {instead}"),
        ));
    }
    Ok(())
}

/// Refuses, under `--format auto`, a file that does not look like text: a NUL byte or invalid
/// UTF-8 in its first 64 KiB (`bytes`: its start, or all of it when `complete`).
pub(super) fn refuse_binary(path: &Path, bytes: &[u8], complete: bool) -> Result<()> {
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    let bad = match head.iter().position(|&b| b == 0) {
        Some(i) => Some((i, "a NUL byte")),
        None => match std::str::from_utf8(head) {
            // A character cut by the 64 KiB window is not an error.
            Err(e) if e.error_len().is_some() || (complete && head.len() == bytes.len()) => {
                Some((e.valid_up_to(), "invalid UTF-8"))
            }
            _ => None,
        },
    };
    if let Some((at, what)) = bad {
        return Err(Error::input(
            path,
            Some(Location::Byte(at as u64)),
            format!(
                "{what}: this looks like a binary file, and --format auto reads text lines only \
                 from text; give --format u64 for little-endian 8-byte keys, or --format lines to \
                 hash its newline-separated bytes anyway"
            ),
        ));
    }
    Ok(())
}

/// The warning for text whose every value looks like a number and whose key type was not given:
/// it is hashed as written (key type `bytes`, recorded in the filter).
pub(super) fn numeric_note(path: &Path, checked: usize, what: &str) -> String {
    format!(
        "{}: every {what} looks like a number ({checked} checked): hashed as text, as written \
         (key type bytes, recorded in the filter); give --key-type (u64, i64, u32, i32, f32, f64, \
         date, timestamp-ms, timestamp-us, timestamp-ns) to hash numbers as a Parquet writer does, \
         or --key-type bytes to keep text and silence this warning",
        path.display()
    )
}

/// Counts how many of `values` (at most [`NUMERIC_SAMPLE`] non-empty ones) there are and whether
/// all look like numbers.
pub(super) fn all_numeric<'a>(values: impl Iterator<Item = &'a [u8]>) -> (usize, bool) {
    let mut n = 0;
    for v in values
        .filter(|v| !v.iter().all(u8::is_ascii_whitespace))
        .take(NUMERIC_SAMPLE)
    {
        if !looks_numeric(v) {
            return (n, false);
        }
        n += 1;
    }
    (n, n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_and_binary_are_named() {
        let name = |b: &[u8]| container_magic(b).map(|(name, _)| name);
        assert_eq!(name(&[0x1f, 0x8b, 8, 0]), Some("gzip-compressed"));
        assert_eq!(name(b"hello"), None);
        assert_eq!(name(b"BZh91AY&SYxx"), Some("bzip2-compressed"));
        assert_eq!(name(b"BZh9 is text"), None);
        let p = Path::new("k.dat");
        let e = refuse_binary(p, &42u64.to_le_bytes(), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("k.dat") && e.contains("--format u64"), "{e}");
        assert!(refuse_binary(p, "héllo\nwörld\n".as_bytes(), true).is_ok());
        assert!(refuse_binary(p, b"ab\xff\xfe", true).is_err());
        let e = refuse_container(Path::new("w.gz"), &[0x1f, 0x8b, 8], "text").unwrap_err();
        assert!(
            e.to_string().contains("w.gz") && e.to_string().contains("gzip"),
            "{e}"
        );
    }

    #[test]
    fn numeric_sample() {
        let lines: [&[u8]; 4] = [b"1", b"", b"-2.5", b"0x10"];
        assert_eq!(all_numeric(lines.into_iter()), (3, true));
        let lines: [&[u8]; 2] = [b"1", b"bob"];
        assert!(!all_numeric(lines.into_iter()).1);
        assert!(!all_numeric(std::iter::empty()).1);
    }
}
