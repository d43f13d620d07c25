//! Reading keys from files: text lines, decimal integers, a CSV column, binary little-endian u64
//! words, or the 5-tuples of a packet capture (see [`pcap`]), into one [`KeySet`]. One file per
//! format family (`text.rs`: lines, decimal, u64; `csv.rs`; [`pcap`]) and one for the key set
//! (`keyset.rs`); a new input format is a new file here plus its [`InputFormat`] variant.
//!
//! Keys from every format hash consistently: a text line, a CSV field and a Parquet `BYTE_ARRAY`
//! value with the same bytes are the same key, and so are a binary u64, a decimal line and a
//! Parquet `INT64` value with the same number.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Location, Result};

mod csv;
mod keyset;
pub mod pcap;
mod text;

pub use keyset::{KeyKind, KeySet, KeySetBuilder};

/// How an input file is read (also the CLI's `--format` values, with feature `cli`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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

pub(crate) fn extension(path: &Path) -> String {
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
        InputFormat::Auto | InputFormat::Lines => text::read_lines(&bytes, out),
        InputFormat::Decimal => text::read_decimal(shown, &bytes, out)?,
        InputFormat::U64 => text::read_u64(shown, &bytes, out)?,
        InputFormat::Csv => csv::read_csv(shown, path, &bytes, opts, out)?,
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

fn read_pcap(path: &Path, bytes: &[u8], out: &mut KeySetBuilder) -> Result<u64> {
    if !pcap::is_capture(bytes) {
        return Err(Error::input(
            path,
            Some(Location::Byte(0)),
            "not a pcap or pcapng capture (unknown magic number)",
        ));
    }
    let cap = pcap::parse(bytes).map_err(|e| {
        Error::input_with(
            path,
            Some(Location::Byte(e.offset)),
            format!("unreadable capture: {}", e.what),
            e,
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
