//! Keys of whole inputs through the pipeline: choosing each input's cutter and parser
//! ([`plan`]), running the chunks through a [`Stage`] and numbering faults by line and byte
//! ([`stream_keys`]).

use std::path::{Path, PathBuf};

use bloomlanes_core::Keys;

use super::chunk::{CsvCutter, Cutter, LineCutter, PcapCutter, PcapngCutter, U64Cutter};
use super::keys::{parse_chunk, ChunkCounts, Fault, Scratch, Shown, StageOrFault};
use super::source::{self, Opened};
use super::{
    detect, pcap, pipeline, Batch, ChunkParser, FieldParser, InputFormat, InputOptions,
    InputSummary, Keep, KeyKind, KeySetBuilder, Stage,
};
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Location, Result};

/// How one input is read: its format, where its records start, its cutter and parser.
struct Plan {
    /// The format decided.
    pub format: InputFormat,
    /// Bytes before the first record (a pcap file header).
    pub start: u64,
    /// The record boundaries.
    pub cutter: Box<dyn Cutter>,
    /// The worker's parser.
    pub parser: ChunkParser,
}

/// Decides how to read `input`.
fn plan(input: &Opened, opts: &InputOptions) -> Result<Plan> {
    let shown = &input.shown;
    let format = detect(&input.path, &input.head, opts).map_err(|e| rename(e, shown))?;
    let lines = |field: Option<FieldParser>| Plan {
        format,
        start: 0,
        cutter: Box::new(LineCutter),
        parser: ChunkParser::Lines { field },
    };
    Ok(match format {
        InputFormat::Auto | InputFormat::Lines => lines(opts.field_parser.clone()),
        InputFormat::Decimal => lines(Some(FieldParser::decimal())),
        InputFormat::Flows => lines(Some(FieldParser::flow_text())),
        InputFormat::U64 => Plan {
            format,
            start: 0,
            cutter: Box::new(U64Cutter {
                shown: shown.clone(),
            }),
            parser: ChunkParser::U64,
        },
        InputFormat::Csv => csv_plan(input, opts)?,
        InputFormat::Pcap => {
            let head = &input.head;
            if head.len() >= 4
                && u32::from_le_bytes([head[0], head[1], head[2], head[3]]) == 0x0a0d_0d0a
            {
                Plan {
                    format,
                    start: 0,
                    cutter: Box::new(PcapngCutter::new(shown)),
                    parser: ChunkParser::Pcapng,
                }
            } else {
                if !pcap::is_capture(head) {
                    return Err(Error::input(
                        shown,
                        Some(Location::Byte(0)),
                        "not a pcap or pcapng capture (unknown magic number)",
                    ));
                }
                let h = pcap::parse_file_header(head)
                    .map_err(|e| super::chunk::capture_error(shown, 0, e))?;
                Plan {
                    format,
                    start: 24,
                    cutter: Box::new(PcapCutter {
                        shown: shown.clone(),
                        big_endian: h.big_endian,
                    }),
                    parser: ChunkParser::Pcap {
                        big_endian: h.big_endian,
                        linktype: h.linktype,
                    },
                }
            }
        }
    })
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

fn csv_plan(input: &Opened, opts: &InputOptions) -> Result<Plan> {
    let shown = &input.shown;
    let delimiter =
        opts.csv_delimiter
            .unwrap_or(if source::format_extension(&input.path) == "tsv" {
                b'\t'
            } else {
                b','
            });
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
        let at = e.position().map(|p| Location::LineByte(p.line(), p.byte()));
        Error::input(shown, at, format!("malformed CSV: {e}"))
    })?;
    let fields = if has_first { first.len() } else { 0 };
    let column = match (&opts.csv_column, opts.csv_header) {
        (None, _) => 0,
        (Some(name), true) => match first.iter().position(|h| h == name.as_bytes()) {
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
                            "no CSV column named {name:?} (the header has: {})",
                            names.join(", ")
                        ),
                    ));
                }
            },
        },
        (Some(name), false) => name.parse::<usize>().map_err(|_| {
            Error::usage(format!(
                "--csv-column {name:?} must be a 0-based index when the CSV file has no header row"
            ))
        })?,
    };
    if has_first && column >= fields {
        return Err(Error::input(
            shown,
            Some(Location::Line(1)),
            format!("CSV column index {column} is out of range: records have {fields} fields"),
        ));
    }
    Ok(Plan {
        format: InputFormat::Csv,
        start: 0,
        cutter: Box::new(CsvCutter::new(shown, delimiter)),
        parser: ChunkParser::Csv {
            delimiter,
            header: opts.csv_header,
            column,
            fields,
            field: opts.field_parser.clone(),
        },
    })
}

type ChunkResult<O> = std::result::Result<(O, ChunkCounts), Fault>;

/// Streams the keys of every input, in order, through `stage` (hashing under `seed`) on the
/// pipeline's workers; `consume` gets each chunk's result in input order. `progress` hears
/// about every chunk (stage `doing`).
pub(crate) fn stream_keys<S: Stage>(
    paths: &[PathBuf],
    opts: &InputOptions,
    seed: u64,
    stage: &S,
    consume: &mut dyn FnMut(S::Out) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<InputSummary>> {
    stream_keys_as(Doing::Insert, paths, opts, seed, stage, consume, progress)
}

/// [`stream_keys`] reporting progress as `doing`.
pub(crate) fn stream_keys_as<S: Stage>(
    doing: Doing,
    paths: &[PathBuf],
    opts: &InputOptions,
    seed: u64,
    stage: &S,
    consume: &mut dyn FnMut(S::Out) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<InputSummary>> {
    let mut summaries = Vec::with_capacity(paths.len());
    let mut keys_before = 0u64;
    let mut bytes_before = 0u64;
    let bytes_total: u64 = paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                .map_or(0, |m| m.len())
        })
        .sum();
    progress(Progress::stream(doing, 0, 0, bytes_total));
    for path in paths {
        let input = source::open(path)?;
        let summary = stream_one(input, opts, seed, stage, consume, &mut |keys, bytes| {
            progress(Progress::stream(
                doing,
                keys_before + keys,
                bytes_before + bytes,
                bytes_total,
            ))
        })?;
        keys_before += summary.keys;
        bytes_before += std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map_or(0, |m| m.len());
        summaries.push(summary);
    }
    progress(Progress::stream(doing, keys_before, bytes_total, bytes_total).finished());
    Ok(summaries)
}

/// Streams the keys of one opened input through `stage`; `progress(keys, bytes)` after each
/// chunk (bytes: 0 when they are not the input's own, i.e. decompressed).
pub(crate) fn stream_one<S: Stage>(
    input: Opened,
    opts: &InputOptions,
    seed: u64,
    stage: &S,
    consume: &mut dyn FnMut(S::Out) -> Result<()>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<InputSummary> {
    let shown = input.shown.clone();
    let compression = input.compression;
    let exact_bytes = compression == source::Compression::None;
    let plan = plan(&input, opts)?;
    let parser = plan.parser.clone();
    let mut summary = InputSummary {
        path: shown.clone(),
        format: plan.format.name(),
        compression: compression.name(),
        ..InputSummary::default()
    };
    let mut lines_before = 0u64;
    let work =
        |chunk: &super::chunk::Chunk, scratch: &mut Scratch| -> Result<ChunkResult<S::Out>> {
            match parse_chunk(&parser, chunk, seed, stage, scratch) {
                Ok(r) => Ok(Ok(r)),
                Err(StageOrFault::Fault(f)) => Ok(Err(f)),
                Err(StageOrFault::Stage(e)) => Err(e),
            }
        };
    let end = pipeline::run(
        input,
        plan.start,
        plan.cutter,
        &opts.pipeline,
        &Scratch::default,
        &work,
        &mut |chunk, r: ChunkResult<S::Out>| {
            let (out, counts) = r.map_err(|f| {
                let at = match f.line {
                    Some(l) => Location::LineByte(lines_before + l, f.byte),
                    None => Location::Byte(f.byte),
                };
                Error::input(&shown, Some(at), f.what)
            })?;
            lines_before += counts.lines;
            summary.keys += counts.keys;
            summary.skipped += counts.skipped;
            consume(out)?;
            let done_bytes = if exact_bytes {
                chunk.offset + chunk.bytes().len() as u64
            } else {
                0
            };
            progress(summary.keys, done_bytes);
            Ok(())
        },
    )?;
    summary.bytes = end.bytes;
    summary.warnings = end.warnings;
    Ok(summary)
}

/// Collects keys (their bytes) into key-set builders, one per chunk.
pub(crate) struct Collect;

impl Stage for Collect {
    type Out = KeySetBuilder;

    fn keep(&self) -> Keep {
        Keep::Bytes
    }

    fn flush(
        &self,
        _keys: Keys<'_>,
        batch: &Batch,
        ints: &[u64],
        out: &mut KeySetBuilder,
    ) -> Result<()> {
        for &v in ints {
            out.push_u64(v);
        }
        for s in &batch.shown {
            match *s {
                Shown::Text(a, b) => {
                    out.push_bytes(&batch.arena[a as usize..b as usize], KeyKind::Text)
                }
                Shown::Tuple(a, b) => {
                    out.push_bytes(&batch.arena[a as usize..b as usize], KeyKind::Tuples)
                }
                Shown::Int(v) => out.push_u64(v),
            }
        }
        Ok(())
    }
}
