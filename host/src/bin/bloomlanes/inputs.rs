//! The input arguments shared by `build`, `query` and `verify` (`--format` and the CSV options),
//! and how the inputs read are reported.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bloomlanes_host::{ops, Error, KeyType, Result};
use bloomlanes_input::{InputFormat, InputOptions, InputSummary, PipelineConfig};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::output::Warnings;

/// The one line of every key-reading command's long help that points at the formats topic.
pub const FORMATS_POINTER: &str = "Input formats, compression, captures and key types: \
`bloomlanes help formats`.";

/// What `bloomlanes help formats` says after the list of formats: how inputs are read.
const READING_HELP: &str = "\
Inputs are streamed (memory stays bounded whatever their size): files, \"-\" for standard input, \
gzip, zstd and xz compressed files or streams (told by their magic bytes). An input whose format \
cannot be told (binary data that is no capture or compressed stream) is an error: give --format.

Packet captures (pcap or pcapng; Ethernet with VLAN tags, raw IP, loopback, Linux SLL/SLL2) give \
one key per IP packet (use `classify` for per-packet verdicts and per-flow counts), its flow's \
5-tuple as bytes in network byte order:
  IPv4, 13 bytes: src addr (4) | dst addr (4) | src port (2) | dst port (2) | protocol (1)
  IPv6, 37 bytes: src addr (16) | dst addr (16) | src port (2) | dst port (2) | protocol (1)
Ports are those of TCP, UDP, UDP-Lite, SCTP and DCCP (zero for other protocols and for non-first \
fragments); the IPv6 protocol is the upper layer after extension headers. Packets that are not IP \
or are cut short are skipped and counted; a truncated last record is a warning. --format flows \
reads flows as text, one per line: 10.0.0.1:1234>10.0.0.2:80/tcp, [2001:db8::1]:53>[2001:db8::2]:53/udp.

Keys hash alike across formats: a text line, a CSV field and a Parquet BYTE_ARRAY value with the \
same bytes are one key; a binary u64, a decimal line and a Parquet INT64 value with the same number \
are one key.

Key types (--key-type): every key is hashed as its Parquet plain encoding, so a filter finds the \
values a Parquet writer stored. Text is parsed as: u64/i64/u32/i32 decimal (sign, _ separators) \
or 0x hex, range-checked; f32/f64 decimal or exponent, inf, -inf, nan (the quiet NaN), -0.0 (kept \
distinct on insert; a lookup of 0.0 or -0.0 finds either, and NaN is always \"may be present\"); \
date YYYY-MM-DD (days since 1970-01-01); timestamp-ms/us/ns an integer in the unit or RFC 3339 \
(2024-01-02T03:04:05.123Z, +HH:MM offsets; none means UTC); fixed:N 2N hex digits, uuid the \
canonical 8-4-4-4-12 text (16 big-endian bytes); flow SRC:PORT -> DST:PORT proto N or SRC:PORT>DST:PORT/PROTO (a protocol name such as tcp, or its number); ip an IPv4 or IPv6 address (its 4 or 16 header \
bytes: `classify --by src|dst` keys packets by one address). The filter \
records the key type; `query` refuses keys of another byte form and warns about another type \
with the same bytes (u64 vs i64). --format auto refuses to guess: a compressed or binary file is \
not read as text; lines that are all numbers are hashed as text (key type bytes) with a warning \
naming --key-type u64 to hash them as numbers.";

/// The formats topic (`bloomlanes help formats`, `bloomlanes formats`): each `--format` value
/// with its description, then how inputs, captures and key types are read. Stated here once,
/// so that each command's help carries only [`FORMATS_POINTER`].
pub fn formats_help() -> String {
    let mut text = String::from(
        "How the commands that read keys (build, insert, delete, query, verify, classify, \
         parquet probe) read their inputs.\n\nFormats (--format):\n",
    );
    for f in InputFormat::ALL {
        text.push_str(&format!("  {:<8} {}\n", f.name(), format_about(f)));
    }
    text.push('\n');
    text.push_str(READING_HELP);
    text
}

/// What a `--format` value means: its doc comment, as clap shows it.
fn format_about(f: InputFormat) -> String {
    f.to_possible_value()
        .and_then(|v| v.get_help().map(|h| h.to_string()))
        .unwrap_or_default()
}

/// Runs `formats`: prints [`formats_help`] (with --json, the formats and their descriptions).
pub fn run_formats(ctx: &crate::Ctx) -> bloomlanes_host::Result<std::process::ExitCode> {
    if ctx.json {
        let formats: Vec<Value> = InputFormat::ALL
            .iter()
            .map(|&f| json!({"format": f.name(), "about": format_about(f)}))
            .collect();
        crate::output::emit(&json!({"formats": formats, "help": formats_help()}))?;
    } else {
        crate::output::say(formats_help().trim_end())?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn parse_delimiter(s: &str) -> std::result::Result<u8, String> {
    match s {
        "\\t" | "tab" => Ok(b'\t'),
        _ if s.len() == 1 && s.is_ascii() => Ok(s.as_bytes()[0]),
        _ => Err(format!(
            "delimiter {s:?} must be one ASCII character (or \\t)"
        )),
    }
}

/// How to read the input files.
#[derive(Args, Debug)]
pub struct InputArgs {
    /// How to read the inputs: auto, lines, decimal, flows, csv, u64 or pcap (see `bloomlanes
    /// help formats`).
    #[arg(long, value_enum, default_value = "auto", hide_possible_values = true)]
    format: InputFormat,
    /// CSV column to take keys from: a header name (its case and the spaces around it count
    /// only when two fields would match without them) or a 0-based index [default: 0].
    #[arg(long, value_name = "NAME|INDEX")]
    csv_column: Option<String>,
    /// The CSV file has no header row.
    #[arg(long)]
    no_header: bool,
    /// CSV field delimiter [default: "," ("\t" for .tsv)].
    #[arg(long, value_parser = parse_delimiter)]
    delimiter: Option<u8>,
    /// Worker threads of the streaming pipeline [default: the cores available].
    #[arg(long)]
    threads: Option<usize>,
    /// Bytes per chunk of the streaming pipeline (tests cut records at every boundary with a few).
    #[arg(long, hide = true)]
    chunk_bytes: Option<usize>,
    /// What the keys are: bytes, u64, i64, u32, i32, f32, f64, date, timestamp-ms,
    /// timestamp-us, timestamp-ns, fixed:N, uuid or flow. Text lines and CSV fields are parsed
    /// as this type and hashed as its Parquet plain encoding [default: from the format; a
    /// query reads text as the filter's recorded type].
    #[arg(long, value_name = "TYPE", value_parser = parse_key_type)]
    pub key_type: Option<KeyType>,
}

/// Parses a `--key-type` value.
pub fn parse_key_type(s: &str) -> std::result::Result<KeyType, String> {
    s.parse::<KeyType>().map_err(|e| e.to_string())
}

impl InputArgs {
    /// The first option given on the command line (`--format` other than auto, the CSV
    /// options, `--threads`, `--key-type`), for a command that reads keys only with another
    /// option to refuse them without it.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            ("--format", self.format != InputFormat::Auto),
            ("--csv-column", self.csv_column.is_some()),
            ("--no-header", self.no_header),
            ("--delimiter", self.delimiter.is_some()),
            ("--threads", self.threads.is_some()),
            ("--chunk-bytes", self.chunk_bytes.is_some()),
            ("--key-type", self.key_type.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
    }

    /// The library's reading options.
    pub fn options(&self) -> InputOptions {
        InputOptions {
            format: self.format,
            csv_column: self.csv_column.clone(),
            csv_header: !self.no_header,
            csv_delimiter: self.delimiter,
            key_type: self.key_type,
            filter_key_type: None,
            field_parser: None,
            pipeline: self.pipeline(),
            // Lines hashed 8 at a time in AVX-512 lanes where the CPU has them.
            span_hasher: Some(bloomlanes_simd::xxh64_spans),
        }
    }

    /// The pipeline's sizes.
    pub fn pipeline(&self) -> PipelineConfig {
        let mut p = match self.threads {
            Some(t) => PipelineConfig::with_threads(t),
            None => PipelineConfig::default(),
        };
        if let Some(b) = self.chunk_bytes {
            p = p.chunk_bytes(b);
        }
        p
    }
}

/// Prints the inputs' warnings on standard error.
pub fn warn_inputs(s: &[InputSummary]) {
    for i in s {
        for w in &i.warnings {
            eprintln!("bloomlanes: warning: {w}");
        }
    }
}

/// The inputs read, as JSON.
pub fn inputs_json(s: &[InputSummary]) -> Value {
    Value::Array(
        s.iter()
            .map(|i| {
                json!({"path": i.path.display().to_string(), "format": i.format,
                       "compression": i.compression, "keys": i.keys, "skipped": i.skipped,
                       "bytes": i.bytes, "warnings": i.warnings,
                       "key_type": i.key_type.to_string()})
            })
            .collect(),
    )
}

/// The inputs read, for people: `keys.txt (lines: 5000 keys), cap.pcap (pcap: 12 keys, 3 skipped)`.
pub fn describe_inputs(s: &[InputSummary]) -> String {
    s.iter()
        .map(|i| {
            let skipped = if i.skipped > 0 {
                format!(", {} skipped", i.skipped)
            } else {
                String::new()
            };
            let format = if i.compression == "none" {
                i.format.to_string()
            } else {
                format!("{}, {}", i.format, i.compression)
            };
            format!(
                "{} ({format}: {} keys of type {}{skipped})",
                i.path.display(),
                i.keys,
                i.key_type
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Inputs that cannot be read twice (standard input, a pipe, a device) copied to temporary
/// files, so that a build without `--capacity` can count their distinct keys in a first pass
/// and insert them in a second, as it does for files. The copies live in the output's folder
/// (the same file system as the filter about to be written there), or in `$TMPDIR` when that
/// folder cannot take them or the output is standard output, and are removed when this is
/// dropped: at the end of the build, and on an error as the error returns.
#[derive(Debug)]
pub struct Spooled {
    /// The inputs to read: each original path, or its temporary copy.
    pub paths: Vec<PathBuf>,
    /// The copies: (temporary path, the original's shown name).
    copies: Vec<(tempfile::TempPath, PathBuf)>,
}

impl Spooled {
    /// Copies each input of `inputs` that cannot be read twice (see
    /// [`ops::stream::reopenable`]) to a temporary file near `output`, saying so on standard
    /// error; the others are kept as they are.
    pub fn unreopenable(inputs: &[PathBuf], output: &Path) -> Result<Spooled> {
        let mut spooled = Spooled {
            paths: Vec::with_capacity(inputs.len()),
            copies: Vec::new(),
        };
        for path in inputs {
            if ops::stream::reopenable(path) {
                spooled.paths.push(path.clone());
                continue;
            }
            let shown = bloomlanes_input::source::shown_name(path);
            let (mut file, dir) = temporary_near(output).map_err(|source| Error::Io {
                path: output.to_path_buf(),
                op: "create a temporary file beside",
                source,
            })?;
            eprintln!(
                "bloomlanes: {} cannot be read twice: copying it to a temporary file in {} to \
                 count its distinct keys first (removed afterwards; give --capacity N to read \
                 it once instead)",
                shown.display(),
                dir.display()
            );
            let copied = if path.as_os_str() == "-" {
                io::copy(&mut io::stdin().lock(), &mut file)
            } else {
                File::open(path).and_then(|mut f| io::copy(&mut f, &mut file))
            };
            copied
                .and_then(|_| file.flush())
                .map_err(|source| Error::Io {
                    path: shown.clone(),
                    op: "copy to a temporary file",
                    source,
                })?;
            let temp = file.into_temp_path();
            spooled.paths.push(temp.to_path_buf());
            spooled.copies.push((temp, shown));
        }
        Ok(spooled)
    }

    /// The name to show for `path`: the original's for a copy.
    fn shown<'p>(&'p self, path: &'p Path) -> &'p Path {
        self.copies
            .iter()
            .find(|(temp, _)| AsRef::<Path>::as_ref(temp) == path)
            .map_or(path, |(_, shown)| shown.as_path())
    }

    /// `summaries` with the original names in place of the copies', in their warnings too.
    pub fn rename_summaries(&self, summaries: &mut [InputSummary]) {
        for s in summaries {
            let shown = self.shown(&s.path).to_path_buf();
            if shown != s.path {
                let (copy, original) = (s.path.display().to_string(), shown.display().to_string());
                for w in &mut s.warnings {
                    *w = w.replace(&copy, &original);
                }
            }
            s.path = shown;
        }
    }

    /// `e` naming the original input in place of its copy.
    pub fn rename_error(&self, mut e: Error) -> Error {
        use bloomlanes_input::Error as ReadError;
        match &mut e {
            Error::Io { path, .. }
            | Error::Input { path, .. }
            | Error::Read {
                source: ReadError::Io { path, .. } | ReadError::Input { path, .. },
            }
            | Error::Read {
                source: ReadError::KeyType { path, .. },
            } => *path = self.shown(path).to_path_buf(),
            _ => {}
        }
        e
    }
}

/// A new temporary file in `output`'s folder, else in `$TMPDIR`, and the folder.
fn temporary_near(output: &Path) -> io::Result<(tempfile::NamedTempFile, PathBuf)> {
    let prefix = ".bloomlanes-input-";
    if output.as_os_str() != "-" {
        let dir = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if let Ok(f) = tempfile::Builder::new().prefix(prefix).tempfile_in(&dir) {
            return Ok((f, dir));
        }
    }
    let dir = std::env::temp_dir();
    Ok((
        tempfile::Builder::new().prefix(prefix).tempfile_in(&dir)?,
        dir,
    ))
}

/// Warns about each input that gave no keys (the filter is then built without them: an empty
/// input builds an empty filter, which is what was asked, but rarely what was meant).
pub fn warn_empty(s: &[InputSummary], warnings: &mut Warnings) {
    for i in s.iter().filter(|i| i.keys == 0) {
        warnings.warn(format!(
            "no keys read from {} ({} bytes{})",
            i.path.display(),
            i.bytes,
            if i.skipped > 0 {
                format!(", {} records skipped", i.skipped)
            } else {
                String::new()
            }
        ));
    }
}
