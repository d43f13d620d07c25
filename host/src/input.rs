//! Reading keys from files: text lines, decimal integers, a CSV column, binary little-endian u64
//! words, or the 5-tuples of a packet capture (see [`crate::pcap`]).
//!
//! Keys from every format hash consistently: a text line, a CSV field and a Parquet `BYTE_ARRAY`
//! value with the same bytes are the same key, and so are a binary u64, a decimal line and a
//! Parquet `INT64` value with the same number.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use bloomlanes_core::{Keys, Records, Strings};

use crate::error::{Error, Location, Result};
use crate::pcap;

/// How an input file is read (also the CLI's `--format` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum InputFormat {
    /// Decide from the contents and the name: a pcap/pcapng magic number means a capture; a
    /// `.csv`/`.tsv` name (or a CSV column given) means CSV; `.u64`/`.bin` means binary u64;
    /// anything else is text lines.
    #[default]
    Auto,
    /// One key per line (the line's bytes without its `\n` or `\r\n`); empty lines are skipped.
    Lines,
    /// One unsigned integer per line (decimal, or hex with `0x`), hashed like a binary u64.
    Decimal,
    /// One column of a CSV file (the field's bytes after unquoting).
    Csv,
    /// Binary little-endian u64 keys, 8 bytes each.
    U64,
    /// The distinct IPv4/IPv6 5-tuples of a pcap or pcapng capture.
    Pcap,
}

impl InputFormat {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Lines => "lines",
            InputFormat::Decimal => "decimal",
            InputFormat::Csv => "csv",
            InputFormat::U64 => "u64",
            InputFormat::Pcap => "pcap",
        }
    }
}

/// Options for reading inputs.
#[derive(Clone, Debug)]
pub struct InputOptions {
    /// The format (or auto-detection).
    pub format: InputFormat,
    /// CSV column: a header name, or a 0-based index. Default: the first column.
    pub csv_column: Option<String>,
    /// Whether the CSV file's first row is a header (default true).
    pub csv_header: bool,
    /// CSV field delimiter (default `,`; `\t` for `.tsv` files under auto).
    pub csv_delimiter: Option<u8>,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            format: InputFormat::Auto,
            csv_column: None,
            csv_header: true,
            csv_delimiter: None,
        }
    }
}

/// What the keys of a [`KeySet`] are, for printing them back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// Integers.
    Integers,
    /// Byte strings (printed as text, invalid UTF-8 replaced).
    Text,
    /// Packet 5-tuples (printed as `src:port -> dst:port proto N`).
    Tuples,
}

#[derive(Clone, Debug)]
enum Repr {
    U64(Vec<u64>),
    Records { data: Vec<u8>, width: usize },
    Strings { data: Vec<u8>, offsets: Vec<u64> },
}

/// An owned batch of keys, handed to backends as a borrowed [`Keys`].
#[derive(Clone, Debug)]
pub struct KeySet {
    repr: Repr,
    kind: KeyKind,
}

impl KeySet {
    /// Integer keys.
    pub fn from_u64(keys: Vec<u64>) -> KeySet {
        KeySet {
            repr: Repr::U64(keys),
            kind: KeyKind::Integers,
        }
    }

    /// Byte-string keys.
    pub fn from_strings<I, S>(keys: I) -> KeySet
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let mut b = KeySetBuilder::default();
        for k in keys {
            b.push_bytes(k.as_ref(), KeyKind::Text);
        }
        b.finish()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys().len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the keys are.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The keys, borrowed in the form the backends take.
    pub fn keys(&self) -> Keys<'_> {
        match &self.repr {
            Repr::U64(k) => Keys::U64(k),
            Repr::Records { data, width } => {
                Keys::Records(Records::new(data, *width).expect("records are whole"))
            }
            Repr::Strings { data, offsets } => {
                Keys::Strings(Strings::new(data, offsets).expect("offsets are valid"))
            }
        }
    }

    /// Key `i` written for people (its number, text or 5-tuple).
    pub fn display(&self, i: usize) -> String {
        match (&self.repr, self.kind) {
            (Repr::U64(k), _) => k[i].to_string(),
            (_, KeyKind::Tuples) => pcap::format_tuple(self.bytes(i)),
            _ => String::from_utf8_lossy(self.bytes(i)).into_owned(),
        }
    }

    /// The bytes that are hashed for key `i` (an integer key: its 8 little-endian bytes).
    pub fn key_bytes(&self, i: usize) -> Vec<u8> {
        match &self.repr {
            Repr::U64(k) => k[i].to_le_bytes().to_vec(),
            _ => self.bytes(i).to_vec(),
        }
    }

    fn bytes(&self, i: usize) -> &[u8] {
        match self.keys() {
            Keys::Records(r) => r.get(i),
            Keys::Strings(s) => s.get(i),
            Keys::U64(_) | Keys::Hashes(_) => &[],
        }
    }
}

/// Accumulates keys of possibly several inputs into one [`KeySet`].
#[derive(Debug, Default)]
pub struct KeySetBuilder {
    ints: Vec<u64>,
    data: Vec<u8>,
    offsets: Vec<u64>,
    kind: Option<KeyKind>,
}

impl KeySetBuilder {
    fn note(&mut self, kind: KeyKind) {
        self.kind = match self.kind {
            None => Some(kind),
            Some(k) if k == kind => Some(k),
            Some(_) => Some(KeyKind::Text),
        };
    }

    /// Adds an integer key.
    pub fn push_u64(&mut self, k: u64) {
        self.note(KeyKind::Integers);
        self.ints.push(k);
    }

    /// Adds a byte-string key.
    pub fn push_bytes(&mut self, k: &[u8], kind: KeyKind) {
        self.note(kind);
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.data.extend_from_slice(k);
        self.offsets.push(self.data.len() as u64);
    }

    /// Number of keys so far.
    pub fn len(&self) -> usize {
        self.ints.len() + self.offsets.len().saturating_sub(1)
    }

    /// Whether no key was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The key set: integers stay integers unless mixed with byte strings (then each becomes its
    /// 8 little-endian bytes, which hash the same); byte strings of one width become records.
    pub fn finish(mut self) -> KeySet {
        let kind = self.kind.unwrap_or(KeyKind::Integers);
        if self.offsets.is_empty() {
            return KeySet {
                repr: Repr::U64(self.ints),
                kind,
            };
        }
        for k in std::mem::take(&mut self.ints) {
            self.data.extend_from_slice(&k.to_le_bytes());
            self.offsets.push(self.data.len() as u64);
        }
        let width = self.offsets[1] - self.offsets[0];
        let uniform = width > 0 && self.offsets.windows(2).all(|w| w[1] - w[0] == width);
        let repr = if uniform {
            Repr::Records {
                data: self.data,
                width: width as usize,
            }
        } else {
            Repr::Strings {
                data: self.data,
                offsets: self.offsets,
            }
        };
        KeySet { repr, kind }
    }
}

/// How many keys an input gave, and what was skipped (for reports).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputSummary {
    /// The file (`-` for standard input).
    pub path: PathBuf,
    /// The format it was read as.
    pub format: &'static str,
    /// Keys taken from it.
    pub keys: u64,
    /// Records skipped (captures: packets that are not IP or are cut short).
    pub skipped: u64,
}

fn read_all(path: &Path) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut buf)
            .map_err(|e| Error::io(Path::new("<stdin>"), "read", e))?;
        return Ok(buf);
    }
    if path.is_dir() {
        return Err(Error::input(path, None, "is a directory, not a file"));
    }
    std::fs::read(path).map_err(|e| Error::io(path, "read", e))
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// The format `path` with contents `bytes` is read as.
pub fn detect(path: &Path, bytes: &[u8], opts: &InputOptions) -> InputFormat {
    if opts.format != InputFormat::Auto {
        return opts.format;
    }
    if pcap::is_capture(bytes) {
        return InputFormat::Pcap;
    }
    match extension(path).as_str() {
        "csv" | "tsv" => InputFormat::Csv,
        "u64" | "bin" => InputFormat::U64,
        "pcap" | "pcapng" | "cap" => InputFormat::Pcap,
        _ if opts.csv_column.is_some() => InputFormat::Csv,
        _ => InputFormat::Lines,
    }
}

/// Reads the keys of one input into `out`.
pub fn read_input(
    path: &Path,
    opts: &InputOptions,
    out: &mut KeySetBuilder,
) -> Result<InputSummary> {
    let bytes = read_all(path)?;
    let shown = if path.as_os_str() == "-" {
        Path::new("<stdin>")
    } else {
        path
    };
    let format = detect(path, &bytes, opts);
    let before = out.len();
    let mut skipped = 0;
    match format {
        InputFormat::Auto | InputFormat::Lines => read_lines(&bytes, out),
        InputFormat::Decimal => read_decimal(shown, &bytes, out)?,
        InputFormat::U64 => read_u64(shown, &bytes, out)?,
        InputFormat::Csv => read_csv(shown, path, &bytes, opts, out)?,
        InputFormat::Pcap => skipped = read_pcap(shown, &bytes, out)?,
    }
    Ok(InputSummary {
        path: shown.to_path_buf(),
        format: format.name(),
        keys: (out.len() - before) as u64,
        skipped,
    })
}

/// Reads every input into one key set.
pub fn read_inputs(paths: &[PathBuf], opts: &InputOptions) -> Result<(KeySet, Vec<InputSummary>)> {
    let mut b = KeySetBuilder::default();
    let mut summaries = Vec::with_capacity(paths.len());
    for p in paths {
        summaries.push(read_input(p, opts, &mut b)?);
    }
    Ok((b.finish(), summaries))
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, usize, &[u8])> {
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

fn read_lines(bytes: &[u8], out: &mut KeySetBuilder) {
    for (_, _, l) in lines(bytes) {
        if !l.is_empty() {
            out.push_bytes(l, KeyKind::Text);
        }
    }
}

fn read_decimal(path: &Path, bytes: &[u8], out: &mut KeySetBuilder) -> Result<()> {
    for (line, at, l) in lines(bytes) {
        let s = String::from_utf8_lossy(l);
        let t = s.trim();
        if t.is_empty() {
            continue;
        }
        let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
            None => t.replace('_', "").parse::<u64>(),
        };
        match v {
            Ok(v) => out.push_u64(v),
            Err(_) => {
                return Err(Error::input(
                    path,
                    Some(Location::LineByte(line, at as u64)),
                    format!("{t:?} is not an unsigned 64-bit integer"),
                ))
            }
        }
    }
    Ok(())
}

fn read_u64(path: &Path, bytes: &[u8], out: &mut KeySetBuilder) -> Result<()> {
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
    out.ints.reserve(bytes.len() / 8);
    for c in bytes.chunks_exact(8) {
        out.push_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    Ok(())
}

fn read_pcap(path: &Path, bytes: &[u8], out: &mut KeySetBuilder) -> Result<u64> {
    if !pcap::is_capture(bytes) {
        return Err(Error::input(
            path,
            Some(Location::Byte(0)),
            "not a pcap or pcapng capture (unknown magic number)",
        ));
    }
    let cap = pcap::parse(bytes).map_err(|e| {
        Error::input(
            path,
            Some(Location::Byte(e.offset)),
            format!("unreadable capture: {}", e.what),
        )
    })?;
    let mut seen = HashSet::with_capacity(cap.tuples.len());
    for t in &cap.tuples {
        if seen.insert(t.as_slice()) {
            out.push_bytes(t, KeyKind::Tuples);
        }
    }
    Ok(cap.non_ip + cap.malformed)
}

fn read_csv(
    shown: &Path,
    path: &Path,
    bytes: &[u8],
    opts: &InputOptions,
    out: &mut KeySetBuilder,
) -> Result<()> {
    let delimiter = opts.csv_delimiter.unwrap_or(if extension(path) == "tsv" {
        b'\t'
    } else {
        b','
    });
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(opts.csv_header)
        .delimiter(delimiter)
        .flexible(false)
        .from_reader(bytes);
    let csv_err = |e: csv::Error| -> Error {
        let at = e.position().map(|p| Location::LineByte(p.line(), p.byte()));
        let what = match e.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => format!(
                "malformed CSV: record has {len} fields, but the first record has {expected_len}"
            ),
            csv::ErrorKind::Utf8 { err, .. } => format!("malformed CSV: {err}"),
            _ => format!("malformed CSV: {e}"),
        };
        Error::input(shown, at, what)
    };
    let mut column = None;
    if opts.csv_header {
        let headers = rdr.byte_headers().map_err(csv_err)?.clone();
        if let Some(name) = &opts.csv_column {
            column = headers.iter().position(|h| h == name.as_bytes());
            if column.is_none() {
                column = name.parse::<usize>().ok();
            }
            if column.is_none() {
                let names: Vec<String> = headers
                    .iter()
                    .map(|h| String::from_utf8_lossy(h).into_owned())
                    .collect();
                return Err(Error::input(
                    shown,
                    Some(Location::Line(1)),
                    format!(
                        "no CSV column named {name:?} (the header has: {})",
                        names.join(", ")
                    ),
                ));
            }
        }
    } else if let Some(name) = &opts.csv_column {
        column = Some(name.parse::<usize>().map_err(|_| {
            Error::usage(format!(
                "--csv-column {name:?} must be a 0-based index when the CSV file has no header row"
            ))
        })?);
    }
    let column = column.unwrap_or(0);
    let mut rec = csv::ByteRecord::new();
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_err(e)),
        }
        match rec.get(column) {
            Some(field) => out.push_bytes(field, KeyKind::Text),
            None => {
                let at = rec
                    .position()
                    .map(|p| Location::LineByte(p.line(), p.byte()));
                return Err(Error::input(
                    shown,
                    at,
                    format!(
                        "CSV column index {column} is out of range: records have {} fields",
                        rec.len()
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_records_and_strings() {
        let mut b = KeySetBuilder::default();
        b.push_bytes(b"abc", KeyKind::Text);
        b.push_bytes(b"def", KeyKind::Text);
        let k = b.finish();
        assert!(matches!(k.keys(), Keys::Records(_)));
        assert_eq!(k.display(1), "def");
        let k = KeySet::from_strings(["a", "bc"]);
        assert!(matches!(k.keys(), Keys::Strings(_)));
        assert_eq!(k.len(), 2);
    }

    #[test]
    fn mixed_ints_hash_like_bytes() {
        let mut b = KeySetBuilder::default();
        b.push_bytes(b"x", KeyKind::Text);
        b.push_u64(42);
        let k = b.finish();
        assert_eq!(
            k.keys().hash(1, 7),
            Keys::U64(&[42]).hash(0, 7),
            "an integer key hashes as its little-endian bytes"
        );
    }

    #[test]
    fn lines_strip_cr_and_skip_empty() {
        let mut b = KeySetBuilder::default();
        read_lines(b"a\r\n\nb\nc", &mut b);
        let k = b.finish();
        assert_eq!(k.len(), 3);
        assert_eq!(k.display(0), "a");
    }
}
