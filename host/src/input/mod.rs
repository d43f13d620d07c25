//! Reading keys from files: text lines, decimal integers, a CSV column, binary little-endian u64
//! words, or the 5-tuples of a packet capture (see [`pcap`]), into one [`KeySet`]. One file per
//! format family (`text.rs`: lines, decimal, u64; `csv.rs`; [`pcap`]) and one for the key set
//! (`keyset.rs`); a new input format is a new file here plus its [`InputFormat`] variant.
//!
//! Keys from every format hash consistently: a text line, a CSV field and a Parquet `BYTE_ARRAY`
//! value with the same bytes are the same key, and so are a binary u64, a decimal line and a
//! Parquet `INT64` value with the same number.
//!
//! The container (lines, CSV, binary, capture) and the key type are separate: text is parsed as
//! [`InputOptions::key_type`] by [`crate::key_text`] (signed and unsigned integers, floats, dates,
//! timestamps, UUIDs …), and every read records its [`KeyType`] in the [`KeySet`] so that a
//! filter knows what its keys were. `--format auto` refuses to guess when it cannot be sure
//! (binary or compressed data, text whose every line is a number and no key type given).

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use bloomlanes_core::{KeyType, Physical};

use crate::error::{Error, Location, Result};

mod csv;
mod keyset;
pub mod pcap;
mod sniff;
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
    /// One integer per line (decimal, or hex with `0x`), hashed like a binary u64 (key type
    /// `u64` unless `--key-type` says otherwise; with a CSV column: that column's integers).
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
    /// The key type (`--key-type`): how text fields and lines are parsed. `None`: the format
    /// decides (lines and CSV: bytes, decimal and binary: `u64`, captures: flow), or
    /// [`InputOptions::filter_key_type`].
    pub key_type: Option<KeyType>,
    /// The key type recorded in the filter the keys are for (a query): text is parsed as this
    /// type when `key_type` is not given.
    pub filter_key_type: Option<KeyType>,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            format: InputFormat::Auto,
            csv_column: None,
            csv_header: true,
            csv_delimiter: None,
            key_type: None,
            filter_key_type: None,
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
    /// The key type its keys were read as.
    pub key_type: KeyType,
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

/// The container a format reads: `--format decimal` with a CSV column (or a `.csv`/`.tsv`
/// name) reads that column's integers.
fn container(path: &Path, format: InputFormat, opts: &InputOptions) -> InputFormat {
    let csv_name = matches!(extension(path).as_str(), "csv" | "tsv");
    match format {
        InputFormat::Decimal if opts.csv_column.is_some() || csv_name => InputFormat::Csv,
        f => f,
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
    let explicit = opts.key_type;
    let text_type = explicit.or(opts.filter_key_type.filter(|t| *t != KeyType::Any));
    let auto = opts.format == InputFormat::Auto;
    let key_type = match container(path, format, opts) {
        InputFormat::Auto | InputFormat::Lines => {
            sniff::refuse_container(shown, &bytes, "text lines")?;
            if auto {
                sniff::refuse_binary(shown, &bytes)?;
            }
            match text_type {
                None | Some(KeyType::Bytes | KeyType::Any) => {
                    if auto && text_type.is_none() {
                        let (n, numeric) = sniff::all_numeric(text::lines(&bytes).map(|l| l.2));
                        if numeric {
                            return Err(sniff::numeric_guess(shown, n, "line"));
                        }
                    }
                    text::read_lines(&bytes, out);
                    KeyType::Bytes
                }
                Some(t) => {
                    text::read_typed(shown, &bytes, t, out)?;
                    t
                }
            }
        }
        InputFormat::Decimal => {
            sniff::refuse_container(shown, &bytes, "decimal text")?;
            let t = text_type.unwrap_or(KeyType::U64);
            text::read_typed(shown, &bytes, t, out)?;
            t
        }
        InputFormat::U64 => {
            let t = explicit
                .or(opts.filter_key_type)
                .filter(|t| t.physical() == Physical::Int64 || t.physical() == Physical::Double)
                .unwrap_or(KeyType::U64);
            check_binary_type(explicit, t)?;
            text::read_u64(shown, &bytes, out)?;
            t
        }
        InputFormat::Csv => {
            sniff::refuse_container(shown, &bytes, "CSV")?;
            let t = match (format, text_type) {
                (InputFormat::Decimal, None) => Some(KeyType::U64),
                (_, t) => t,
            };
            csv::read_csv(shown, path, &bytes, opts, t, out)?;
            t.unwrap_or(KeyType::Bytes)
        }
        InputFormat::Pcap => {
            if let Some(t) = explicit.filter(|t| !matches!(t, KeyType::Flow | KeyType::Any)) {
                return Err(Error::usage(format!(
                    "--key-type {t}: the keys of a capture are flow 5-tuples (--key-type flow)"
                )));
            }
            skipped = read_pcap(shown, &bytes, out)?;
            KeyType::Flow
        }
    };
    Ok(InputSummary {
        path: shown.to_path_buf(),
        format: format.name(),
        keys: (out.len() - before) as u64,
        skipped,
        key_type,
    })
}

/// `--format u64` reads 8-byte keys: a `--key-type` of another width cannot describe them.
fn check_binary_type(explicit: Option<KeyType>, used: KeyType) -> Result<()> {
    match explicit {
        Some(t) if t != used && t != KeyType::Any => Err(Error::usage(format!(
            "--format u64 reads 8-byte little-endian keys; --key-type {t} keys are not 8-byte              integers (use --key-type u64, i64, f64 or a timestamp type)"
        ))),
        _ => Ok(()),
    }
}

/// Reads every input into one key set.
pub fn read_inputs(paths: &[PathBuf], opts: &InputOptions) -> Result<(KeySet, Vec<InputSummary>)> {
    let mut b = KeySetBuilder::default();
    let mut summaries = Vec::with_capacity(paths.len());
    for p in paths {
        summaries.push(read_input(p, opts, &mut b)?);
    }
    let key_type = one_key_type(&summaries)?;
    Ok((b.finish().with_key_type(key_type), summaries))
}

/// The key type of all the inputs: they must agree (one filter has one key type).
fn one_key_type(summaries: &[InputSummary]) -> Result<KeyType> {
    let Some(first) = summaries.first() else {
        return Ok(KeyType::Any);
    };
    if let Some(other) = summaries.iter().find(|s| s.key_type != first.key_type) {
        return Err(Error::usage(format!(
            "the inputs have keys of different types: {} ({}) and {} ({}); one filter holds keys \
             of one type: give --key-type, or read them separately",
            first.path.display(),
            first.key_type,
            other.path.display(),
            other.key_type
        )));
    }
    Ok(first.key_type)
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
