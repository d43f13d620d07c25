//! `bloomlanes-input`: the streaming key-input pipeline of bloomlanes. Text lines, decimal
//! integers, text flow keys, a CSV column, binary little-endian u64 words, or the flow keys
//! (5-tuples) of a packet capture are read, parsed and hashed on every core, with bounded memory
//! whatever the input's size; the `bloomlanes` tool, its library (`bloomlanes-host`) and the
//! Python package all read their keys through it.
//!
//! Every input goes through one pipeline ([`pipeline`]): [`source`] opens it (a memory map for a
//! regular file; standard input as `-`; gzip, zstd and xz undone on the fly with the feature
//! `compression`), [`chunk`] cuts it into chunks of whole records, and worker threads parse and
//! hash the keys of each chunk (`keys.rs`) and hand them to the caller's [`Stage`] (insert,
//! probe, count, collect). [`stream_keys`] runs a stage over whole inputs and numbers faults by
//! line and byte; [`read_inputs`] collects the keys into a [`KeySet`] for the callers that need
//! them all at once; [`count_distinct`] sizes a filter (a [`hll`] sketch of the keys).
//!
//! Keys from every format hash consistently: a text line, a CSV field and a Parquet `BYTE_ARRAY`
//! value with the same bytes are the same key, and so are a binary u64, a decimal line and a
//! Parquet `INT64` value with the same number.
//!
//! The container (lines, CSV, binary, capture) and the key type are separate: text is parsed as
//! [`InputOptions::key_type`] by [`key_text`] (signed and unsigned integers, floats, dates,
//! timestamps, UUIDs …), and every read records its [`KeyType`] in the [`KeySet`] so that a
//! filter knows what its keys were. `--format auto` refuses to guess when it cannot be sure
//! (binary or compressed data, text whose every line is a number and no key type given).
//! [`pcap`] reads captures' flow keys and writes captures ([`pcap::write`]).
//!
//! ```
//! use bloomlanes_input::{read_inputs, InputOptions, KeyType};
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("ids.txt");
//! std::fs::write(&path, "-5\n42\n")?;
//! let opts = InputOptions { key_type: Some(KeyType::I64), ..InputOptions::default() };
//! let (keys, summaries) = read_inputs(&[path], &opts)?;
//! assert_eq!((keys.len(), summaries[0].keys), (2, 2));
//! assert_eq!(keys.key_type(), KeyType::I64);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! It depends on `bloomlanes-core` alone (keys are hashed with the core's XXH64, one at a time
//! as they are parsed; no SIMD crate is needed for that).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

use std::path::{Path, PathBuf};

pub use bloomlanes_core::KeyType;

pub mod chunk;
mod csv_place;
pub mod error;
mod field;
pub mod hll;
pub mod key_text;
mod keys;
mod keyset;
mod lines;
pub mod pairs;
pub mod pcap;
pub mod pipeline;
mod plan;
mod sniff;
pub mod source;
pub mod speculate;
mod stage;
mod stream;

pub use error::{BoxedSource, Error, Location, Result};
pub use field::{shorten, FieldFn, FieldParser, Parsed, ECHO_BYTES};
pub use keyset::{KeyKind, KeySet, KeySetBuilder};
pub use lines::{span_range, xxh64_spans, SpanHasher};
pub use pipeline::PipelineConfig;
pub use plan::CapturePlan;
pub use source::Compression;
pub use stage::{write_json_string, write_u64, BatchKeys, HashStage, Keep, Stage};
pub use stream::{count_distinct, stream_keys, Collect, StreamProgress};

/// How an input is read (also the CLI's `--format` values, with feature `clap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum InputFormat {
    /// Decide from the contents and the name: a pcap/pcapng magic number means a capture; a
    /// `.csv`/`.tsv` name (or a CSV column given) means CSV; `.u64`/`.bin` means binary u64;
    /// other text is lines. Binary contents of no known format are an error.
    #[default]
    Auto,
    /// One key per line (the line's bytes without its `\n` or `\r\n`); empty lines are skipped,
    /// and so is a UTF-8 byte order mark that starts the input.
    Lines,
    /// One integer per line (decimal, or hex with `0x`), hashed like a binary u64 (key type
    /// `u64` unless `--key-type` says otherwise; with a CSV column: that column's integers).
    Decimal,
    /// One flow key per line as text: `10.0.0.1:1234>10.0.0.2:80/tcp`, IPv6 in brackets;
    /// hashed as the 13- or 37-byte key of a captured packet of that flow.
    Flows,
    /// One column of a CSV file (the field's bytes after unquoting).
    Csv,
    /// Binary little-endian u64 keys, 8 bytes each.
    U64,
    /// The flow key (5-tuple) of every IPv4/IPv6 packet of a pcap or pcapng capture.
    Pcap,
}

impl InputFormat {
    /// Every format, in the order of the command line's help.
    pub const ALL: [InputFormat; 7] = [
        InputFormat::Auto,
        InputFormat::Lines,
        InputFormat::Decimal,
        InputFormat::Flows,
        InputFormat::Csv,
        InputFormat::U64,
        InputFormat::Pcap,
    ];

    /// The format named `name` on the command line (`auto`, `lines`, `decimal`, `flows`, `csv`,
    /// `u64`, `pcap`).
    pub fn from_name(name: &str) -> Option<InputFormat> {
        InputFormat::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Lines => "lines",
            InputFormat::Decimal => "decimal",
            InputFormat::Flows => "flows",
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
    /// A parser for each line (lines format) or CSV field, replacing the format's own: the hook
    /// for typed keys.
    pub field_parser: Option<FieldParser>,
    /// Threads and chunk sizes of the pipeline.
    pub pipeline: PipelineConfig,
    /// The key type (`--key-type`): how text fields and lines are parsed. `None`: the format
    /// decides (lines and CSV: bytes, decimal and binary: `u64`, captures: flow), or
    /// [`InputOptions::filter_key_type`].
    pub key_type: Option<KeyType>,
    /// The key type recorded in the filter the keys are for (a query): text is parsed as this
    /// type when `key_type` is not given.
    pub filter_key_type: Option<KeyType>,
    /// How lines read as they are (no `--key-type`) are hashed when only their hashes are
    /// wanted: a batch of places at once (see [`SpanHasher`]). `None`: the core's XXH64 one by
    /// one ([`xxh64_spans`]); a caller with SIMD lanes brings a faster one of the same values.
    pub span_hasher: Option<SpanHasher>,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            format: InputFormat::Auto,
            csv_column: None,
            csv_header: true,
            csv_delimiter: None,
            field_parser: None,
            pipeline: PipelineConfig::default(),
            key_type: None,
            filter_key_type: None,
            span_hasher: None,
        }
    }
}

/// How many keys an input gave, and what was skipped (for reports).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputSummary {
    /// The file (`<stdin>` for standard input).
    pub path: PathBuf,
    /// The format it was read as.
    pub format: &'static str,
    /// How it was compressed (`none`, `gzip`, `zstd`, `xz`).
    pub compression: &'static str,
    /// Keys taken from it.
    pub keys: u64,
    /// Records skipped (captures: packets that are not IP or are cut short).
    pub skipped: u64,
    /// Bytes read (after decompression).
    pub bytes: u64,
    /// Warnings (e.g. a capture's truncated last record, ignored).
    pub warnings: Vec<String>,
    /// The key type its keys were read as.
    pub key_type: KeyType,
}

/// The format `path` with first bytes `head` is read as (auto-detection, see
/// [`InputFormat::Auto`]); an error if it cannot be told.
pub fn detect(path: &Path, head: &[u8], opts: &InputOptions) -> Result<InputFormat> {
    if opts.format != InputFormat::Auto {
        return Ok(opts.format);
    }
    if pcap::is_capture(head) {
        return Ok(InputFormat::Pcap);
    }
    let ext = source::format_extension(path);
    match ext.as_str() {
        "csv" | "tsv" => return Ok(InputFormat::Csv),
        "u64" | "bin" => return Ok(InputFormat::U64),
        "pcap" | "pcapng" | "cap" => {
            return Err(Error::input(
                path,
                Some(Location::Byte(0)),
                "named like a capture but not a pcap or pcapng file (unknown magic number)",
            ))
        }
        _ => {}
    }
    if opts.csv_column.is_some() {
        return Ok(InputFormat::Csv);
    }
    if let Some(at) = memchr::memchr(0, head) {
        // Binary, so refused either way: a Parquet or filter file is named for what it is (a
        // `.u64` file, above, may start with any bytes; text that happens to start with a
        // magic number is no container).
        sniff::refuse_container(path, head, "a key list")?;
        return Err(Error::input(
            path,
            Some(Location::Byte(at as u64)),
            "cannot tell this input's format: it holds binary data (a NUL byte) and is no \
             capture or compressed stream known here; give --format u64 for little-endian \
             8-byte keys, or --format lines, decimal, flows, csv or pcap",
        ));
    }
    Ok(InputFormat::Lines)
}

/// The container a format reads: `--format decimal` with a CSV column (or a `.csv`/`.tsv`
/// name) reads that column's integers.
fn container(path: &Path, format: InputFormat, opts: &InputOptions) -> InputFormat {
    let csv_name = matches!(source::format_extension(path).as_str(), "csv" | "tsv");
    match format {
        InputFormat::Decimal if opts.csv_column.is_some() || csv_name => InputFormat::Csv,
        f => f,
    }
}

/// Streams the keys of `paths` into `out`, in order.
fn collect(
    paths: &[PathBuf],
    opts: &InputOptions,
    out: &mut KeySetBuilder,
) -> Result<Vec<InputSummary>> {
    let mut append = |part: KeySetBuilder| -> Result<()> {
        out.append(part);
        Ok(())
    };
    stream_keys(paths, opts, 0, &Collect, &mut append, &mut |_| {})
}

/// Reads the keys of one input into `out`.
pub fn read_input(
    path: &Path,
    opts: &InputOptions,
    out: &mut KeySetBuilder,
) -> Result<InputSummary> {
    let mut summaries = collect(std::slice::from_ref(&path.to_path_buf()), opts, out)?;
    Ok(summaries.remove(0))
}

/// Reads every input into one key set (for callers that need all keys at once; the commands
/// stream instead).
pub fn read_inputs(paths: &[PathBuf], opts: &InputOptions) -> Result<(KeySet, Vec<InputSummary>)> {
    let mut b = KeySetBuilder::default();
    let summaries = collect(paths, opts, &mut b)?;
    let key_type = one_key_type(&summaries)?;
    Ok((b.finish().with_key_type(key_type), summaries))
}

/// `--format u64` reads 8-byte keys: a `--key-type` of another width cannot describe them.
fn check_binary_type(explicit: Option<KeyType>, used: KeyType) -> Result<()> {
    match explicit {
        Some(t) if t != used && t != KeyType::Any => Err(Error::usage(format!(
            "--format u64 reads 8-byte little-endian keys; --key-type {t} keys are not 8-byte \
             integers (use --key-type u64, i64, f64 or a timestamp type)"
        ))),
        _ => Ok(()),
    }
}

/// The key type of all the inputs: they must agree (one filter has one key type).
pub fn one_key_type(summaries: &[InputSummary]) -> Result<KeyType> {
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

/// Reads the keys of a stream that is already open (`name` names it in messages), as
/// [`read_input`] reads a file: compression detected and undone, the format decided from
/// `opts` and the first bytes, the records cut into chunks of `opts.pipeline` sizes.
pub fn read_reader(
    name: &Path,
    reader: Box<dyn std::io::Read + Send>,
    opts: &InputOptions,
) -> Result<(KeySet, InputSummary)> {
    let input = source::open_reader(name, reader)?;
    let mut b = KeySetBuilder::default();
    let summary = stream::stream_one(
        input,
        opts,
        0,
        &Collect,
        &mut |part: KeySetBuilder| -> Result<()> {
            b.append(part);
            Ok(())
        },
        &mut |_, _| {},
    )?;
    let key_type = summary.key_type;
    Ok((b.finish().with_key_type(key_type), summary))
}
