//! Deciding how each input is read ([`plan`]): its format (auto-detected or given), where its
//! records start, the cutter that finds their boundaries and the parser of its keys, and what
//! its keys are (the key type given, the filter's, or the format's own).

use std::path::Path;

use bloomlanes_core::{KeyType, Physical};

use crate::chunk::{CsvCutter, Cutter, LineCutter, PcapCutter, PcapngCutter, U64Cutter};
use crate::keys::ChunkParser;
use crate::lines::xxh64_spans;
use crate::sniff;
use crate::source::{self, Opened};
use crate::{detect, pcap, Error, FieldParser, InputFormat, InputOptions, Location, Result};

/// The UTF-8 byte order mark, which a text input may start with.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// How one input is read: its format, where its records start, its cutter and parser.
pub(crate) struct Plan {
    /// The format decided.
    pub format: InputFormat,
    /// Bytes before the first record (a pcap file header; blank lines before a CSV header).
    pub start: u64,
    /// Lines before the first record (to number the lines of messages).
    pub start_lines: u64,
    /// The record boundaries.
    pub cutter: Box<dyn Cutter>,
    /// The worker's parser.
    pub parser: ChunkParser,
    /// What its keys are.
    pub key_type: KeyType,
    /// A warning about how the keys are read (text of numbers hashed as text), for the summary.
    pub note: Option<String>,
}

/// The parser of text fields of type `t` (`None`: the field's bytes): integers of type `u64`
/// through the fast decimal parser, everything else through [`crate::key_text`].
fn text_parser(t: Option<KeyType>) -> Option<FieldParser> {
    match t {
        None | Some(KeyType::Bytes | KeyType::Any) => None,
        Some(KeyType::U64) => Some(FieldParser::decimal()),
        Some(t) => Some(FieldParser::typed(t)),
    }
}

/// The lines of `head` that are surely whole (the last one only when `head` is the whole input).
fn head_lines(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    let whole = head.len() < source::SNIFF_BYTES;
    let end = if whole {
        head.len()
    } else {
        memchr::memrchr(b'\n', head).unwrap_or(0)
    };
    head[..end]
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
}

/// Decides how to read `input`, and what its keys are (see [`InputOptions::key_type`]): text
/// is parsed as the type given, else as the filter's recorded type (a query), else as the
/// format's own; `--format auto` refuses compressed or container data and binary data, and
/// warns when text whose every line is a number is hashed as text (see `sniff`).
pub(crate) fn plan(input: &Opened, opts: &InputOptions) -> Result<Plan> {
    let shown = &input.shown;
    let head = &input.head;
    let format = detect(&input.path, head, opts).map_err(|e| rename(e, shown))?;
    let explicit = opts.key_type;
    let text_type = explicit.or(opts.filter_key_type.filter(|t| *t != KeyType::Any));
    let auto = opts.format == InputFormat::Auto;
    let whole = head.len() < source::SNIFF_BYTES;
    // A UTF-8 byte order mark (Notepad, PowerShell, spreadsheet exports) is no part of the
    // first line's key: read into it, "alpha" would be a key no query of alpha finds.
    let bom = if head.starts_with(UTF8_BOM) {
        UTF8_BOM.len()
    } else {
        0
    };
    let lines = |field: Option<FieldParser>, key_type: KeyType| Plan {
        format,
        start: bom as u64,
        start_lines: 0,
        cutter: Box::new(LineCutter),
        parser: ChunkParser::Lines {
            field,
            hasher: opts.span_hasher.unwrap_or(xxh64_spans),
        },
        key_type,
        note: None,
    };
    Ok(match crate::container(&input.path, format, opts) {
        InputFormat::Auto | InputFormat::Lines => {
            sniff::refuse_container(shown, head, "text lines")?;
            if auto {
                sniff::refuse_binary(shown, head, whole)?;
            }
            if let Some(p) = &opts.field_parser {
                let t = p.key_type().or(text_type).unwrap_or(KeyType::Bytes);
                lines(Some(p.clone()), t)
            } else {
                match text_type {
                    None | Some(KeyType::Bytes | KeyType::Any) => {
                        let mut plan = lines(None, KeyType::Bytes);
                        if auto && text_type.is_none() {
                            let (n, numeric) = sniff::all_numeric(head_lines(&head[bom..]));
                            if numeric {
                                plan.note = Some(sniff::numeric_note(shown, n, "line"));
                            }
                        }
                        plan
                    }
                    Some(t) => lines(text_parser(Some(t)), t),
                }
            }
        }
        InputFormat::Decimal => {
            sniff::refuse_container(shown, head, "decimal text")?;
            let t = text_type.unwrap_or(KeyType::U64);
            lines(text_parser(Some(t)), t)
        }
        InputFormat::Flows => {
            if let Some(t) = explicit.filter(|t| !matches!(t, KeyType::Flow | KeyType::Any)) {
                return Err(Error::usage(format!(
                    "--key-type {t}: --format flows reads flow 5-tuples (--key-type flow)"
                )));
            }
            lines(Some(FieldParser::flow_text()), KeyType::Flow)
        }
        InputFormat::U64 => {
            let t = explicit
                .or(opts.filter_key_type)
                .filter(|t| t.physical() == Physical::Int64 || t.physical() == Physical::Double)
                .unwrap_or(KeyType::U64);
            crate::check_binary_type(explicit, t)?;
            Plan {
                format,
                start: 0,
                start_lines: 0,
                cutter: Box::new(U64Cutter {
                    shown: shown.clone(),
                }),
                parser: ChunkParser::U64,
                key_type: t,
                note: None,
            }
        }
        InputFormat::Csv => {
            sniff::refuse_container(shown, head, "CSV")?;
            let t = match (format, text_type) {
                (InputFormat::Decimal, None) => Some(KeyType::U64),
                (_, t) => t,
            };
            csv_plan(input, opts, t)?
        }
        InputFormat::Pcap => {
            if let Some(t) = explicit.filter(|t| !matches!(t, KeyType::Flow | KeyType::Any)) {
                return Err(Error::usage(format!(
                    "--key-type {t}: the keys of a capture are flow 5-tuples (--key-type flow)"
                )));
            }
            let capture = CapturePlan::new(shown, &input.head)?;
            Plan {
                format,
                start: capture.start,
                start_lines: 0,
                parser: match capture.header {
                    Some(h) => ChunkParser::Pcap {
                        big_endian: h.big_endian,
                        linktype: h.linktype,
                    },
                    None => ChunkParser::Pcapng,
                },
                cutter: capture.cutter,
                key_type: KeyType::Flow,
                note: None,
            }
        }
    })
}

/// How a capture is cut into chunks of whole records: pcapng blocks, or the packet records of a
/// classic pcap file after its 24-byte header.
pub struct CapturePlan {
    /// Bytes before the first record (24 for a classic pcap file, 0 for pcapng).
    pub start: u64,
    /// The cutter of its records.
    pub cutter: Box<dyn Cutter>,
    /// The classic pcap file header (`None`: pcapng).
    pub header: Option<pcap::FileHeader>,
}

impl CapturePlan {
    /// The plan for the capture `shown` whose first bytes are `head`; an error naming the file
    /// when they are neither a pcapng section nor a readable pcap file header.
    pub fn new(shown: &Path, head: &[u8]) -> Result<CapturePlan> {
        if pcap::is_pcapng(head) {
            return Ok(CapturePlan {
                start: 0,
                cutter: Box::new(PcapngCutter::new(shown)),
                header: None,
            });
        }
        if !pcap::is_capture(head) {
            return Err(Error::input(
                shown,
                Some(Location::Byte(0)),
                "not a pcap or pcapng capture (unknown magic number)",
            ));
        }
        let h =
            pcap::parse_file_header(head).map_err(|e| crate::chunk::capture_error(shown, 0, e))?;
        Ok(CapturePlan {
            start: 24,
            cutter: Box::new(PcapCutter {
                shown: shown.to_path_buf(),
                big_endian: h.big_endian,
            }),
            header: Some(h),
        })
    }
}

/// An error about `path` (as given) told about `shown` (`<stdin>` for `-`).
fn rename(e: Error, shown: &Path) -> Error {
    match e {
        Error::Input {
            at, what, source, ..
        } => Error::Input {
            path: shown.to_path_buf(),
            at,
            what,
            source,
        },
        e => e,
    }
}

/// Reads one CSV column, its fields parsed as `key_type` (`None`: taken as bytes, with a
/// warning when every field in the first 64 KiB looks like a number, as for lines).
fn csv_plan(input: &Opened, opts: &InputOptions, key_type: Option<KeyType>) -> Result<Plan> {
    let shown = &input.shown;
    let delimiter = csv_delimiter(input, opts);
    let head = &input.head;
    if head.len() == source::SNIFF_BYTES && memchr::memchr(b'\n', head).is_none() {
        return Err(Error::input(
            shown,
            Some(Location::Line(1)),
            format!(
                "the first CSV record is longer than {} KiB",
                source::SNIFF_BYTES >> 10
            ),
        ));
    }
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(&head[..]);
    let mut first = ::csv::ByteRecord::new();
    let has_first = rdr.read_byte_record(&mut first).map_err(|e| {
        let at = e.position().map(|p| {
            let (line, byte) = crate::csv_place::place_in(head, p.byte());
            Location::LineByte(line, byte)
        });
        Error::input(shown, at, format!("malformed CSV: {e}"))
    })?;
    let fields = if has_first { first.len() } else { 0 };
    let column = csv_column(
        shown,
        &first,
        opts.csv_column.as_deref(),
        opts.csv_header,
        "--csv-column",
    )?;
    if has_first && column >= fields {
        return Err(Error::input(
            shown,
            Some(Location::Line(1)),
            format!("CSV column index {column} is out of range: records have {fields} fields"),
        ));
    }
    let field = match &opts.field_parser {
        Some(p) => Some(p.clone()),
        None => text_parser(key_type),
    };
    let note = if field.is_none() && key_type.is_none() {
        numeric_column(input, opts, delimiter, column)?
    } else {
        None
    };
    let key_type = field
        .as_ref()
        .and_then(FieldParser::key_type)
        .or(key_type)
        .unwrap_or(KeyType::Bytes);
    // Blank lines before the first record are skipped by a CSV reader; skipped here, so that
    // the first record (the header) is the first of chunk 0 however small the chunks are.
    let blank = head
        .iter()
        .take_while(|&&b| b == b'\n' || b == b'\r')
        .count();
    let blank = head[..blank]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    Ok(Plan {
        format: InputFormat::Csv,
        start: blank as u64,
        start_lines: memchr::memchr_iter(b'\n', &head[..blank]).count() as u64,
        cutter: Box::new(CsvCutter::new(shown, delimiter)),
        parser: ChunkParser::Csv {
            delimiter,
            header: opts.csv_header,
            column,
            fields,
            field,
        },
        key_type,
        note,
    })
}

/// The CSV field delimiter of `input`: `--delimiter`, else a tab for a `.tsv` name, else `,`.
pub(crate) fn csv_delimiter(input: &Opened, opts: &InputOptions) -> u8 {
    opts.csv_delimiter
        .unwrap_or(if source::format_extension(&input.path) == "tsv" {
            b'\t'
        } else {
            b','
        })
}

/// A hint for a header read as one field that another delimiter would split (a spreadsheet's
/// `;` export, a tab-separated file named `.csv`): which `--delimiter` to give.
fn delimiter_hint(names: &[String]) -> String {
    let [only] = names else {
        return String::new();
    };
    [(';', "';'"), ('\t', "'\\t'"), ('|', "'|'")]
        .iter()
        .find(|(d, _)| only.contains(*d))
        .map_or(String::new(), |(_, flag)| {
            format!("; the header is one field: is the delimiter {flag}? give --delimiter {flag}")
        })
}

/// The index of CSV column `name` (a header name, or a 0-based index; `None`: 0) given the
/// first record `first`; `flag` names the option in messages.
pub(crate) fn csv_column(
    shown: &Path,
    first: &::csv::ByteRecord,
    name: Option<&str>,
    header: bool,
    flag: &str,
) -> Result<usize> {
    Ok(match (name, header) {
        (None, _) => 0,
        (Some(name), true) => match first
            .iter()
            .position(|h| h == name.as_bytes())
            // A number is an index unless a field is that number exactly.
            .or_else(|| {
                name.parse::<usize>()
                    .is_err()
                    .then(|| loose_match(first, name))?
            }) {
            Some(i) => i,
            None => match name.parse::<usize>() {
                Ok(i) => i,
                Err(_) => {
                    let names: Vec<String> = first
                        .iter()
                        .map(|h| String::from_utf8_lossy(h).into_owned())
                        .collect();
                    return Err(Error::input(
                        shown,
                        Some(Location::Line(1)),
                        format!(
                            "no CSV column named {name:?} (the header has: {}){}",
                            names.join(", "),
                            delimiter_hint(&names)
                        ),
                    ));
                }
            },
        },
        (Some(name), false) => name.parse::<usize>().map_err(|_| {
            Error::usage(format!(
                "{flag} {name:?} must be a 0-based index when the CSV file has no header row"
            ))
        })?,
    })
}

/// The one header field that is `name` but for case and the spaces around it (`ip` finds
/// "IP", `action` finds " Action" in `IP, Action`), as SQL engines match column names; `None`
/// when none is, or when two are (then only the exact name can choose).
fn loose_match(header: &::csv::ByteRecord, name: &str) -> Option<usize> {
    let want = name.trim().to_lowercase();
    let mut found = header
        .iter()
        .enumerate()
        .filter(|(_, h)| String::from_utf8_lossy(h).trim().to_lowercase() == want)
        .map(|(i, _)| i);
    match (found.next(), found.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

/// The warning for a CSV column read as bytes whose every field (in the records of the head
/// that are surely whole) looks like a number (see `sniff::numeric_note`).
fn numeric_column(
    input: &Opened,
    opts: &InputOptions,
    delimiter: u8,
    column: usize,
) -> Result<Option<String>> {
    let head = &input.head;
    let mut rdr = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(&head[..]);
    let mut values: Vec<Vec<u8>> = Vec::new();
    let mut rec = ::csv::ByteRecord::new();
    let mut skip_header = opts.csv_header;
    let mut width = None;
    loop {
        match rdr.read_byte_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(_) => return Ok(None), // malformed: the reader names the record
        }
        if *width.get_or_insert(rec.len()) != rec.len() {
            return Ok(None); // a record of another width: the reader names it
        }
        if std::mem::take(&mut skip_header) {
            continue;
        }
        if let Some(f) = rec.get(column) {
            values.push(f.to_vec());
        }
        if values.len() > sniff::NUMERIC_SAMPLE {
            break;
        }
    }
    if head.len() >= source::SNIFF_BYTES {
        values.pop(); // the last record may be cut by the end of the head
    }
    let (n, numeric) = sniff::all_numeric(values.iter().map(Vec::as_slice));
    Ok(numeric.then(|| sniff::numeric_note(&input.shown, n, "field of the CSV column")))
}
