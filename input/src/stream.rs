//! Keys of whole inputs through the pipeline: each input planned (`plan.rs`: its format,
//! cutter and parser), its chunks run through a [`Stage`] and its faults numbered by line and
//! byte ([`stream_keys`]); the stages of this crate: [`Collect`] (keys into key sets) and the
//! distinct count of [`count_distinct`].

use std::path::PathBuf;

use bloomlanes_core::{KeyMatch, Keys};

use crate::chunk::Chunk;
use crate::hll::Hll;
use crate::keys::{parse_chunk, ChunkCounts, Fault, Scratch, StageOrFault};
use crate::plan::plan;
use crate::source::{self, Opened};
use crate::stage::{BatchKeys, Shown};
use crate::{
    pipeline, Error, InputOptions, InputSummary, Keep, KeyKind, KeySetBuilder, Location, Result,
    Stage,
};

type ChunkResult<O> = std::result::Result<(O, ChunkCounts), Fault>;

/// How far a stream has come: reported before the first chunk, after every chunk and, marked
/// `finished`, after the last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamProgress {
    /// Keys read so far (all inputs).
    pub keys: u64,
    /// Bytes of the input files read so far (0 while a decompressed input is read).
    pub bytes: u64,
    /// Bytes of all the input files (0 when unknown: standard input, pipes).
    pub bytes_total: u64,
    /// This is the last report.
    pub finished: bool,
}

/// The size of `path` when it is a regular file (0 otherwise: its length says nothing).
fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0, |m| m.len())
}

/// Streams the keys of every input, in order, through `stage` (hashing under `seed`) on the
/// pipeline's workers; `consume` gets each chunk's result in input order. `progress` hears
/// about every chunk. The first error in input order (the input's, the stage's or the
/// consumer's) stops the stream and is returned.
pub fn stream_keys<S: Stage>(
    paths: &[PathBuf],
    opts: &InputOptions,
    seed: u64,
    stage: &S,
    consume: &mut dyn FnMut(S::Out) -> Result<(), S::Error>,
    progress: &mut dyn FnMut(StreamProgress),
) -> Result<Vec<InputSummary>, S::Error> {
    let mut summaries = Vec::with_capacity(paths.len());
    let mut keys_before = 0u64;
    let mut bytes_before = 0u64;
    let bytes_total: u64 = paths.iter().map(|p| file_len(p)).sum();
    let report = |keys, bytes| StreamProgress {
        keys,
        bytes,
        bytes_total,
        finished: false,
    };
    progress(report(0, 0));
    for path in paths {
        let input = source::open(path)?;
        let summary = stream_one(input, opts, seed, stage, consume, &mut |keys, bytes| {
            progress(report(keys_before + keys, bytes_before + bytes))
        })?;
        keys_before += summary.keys;
        bytes_before += file_len(path);
        summaries.push(summary);
    }
    progress(StreamProgress {
        finished: true,
        ..report(keys_before, bytes_total)
    });
    Ok(summaries)
}

/// Streams the keys of one opened input through `stage`; `progress(keys, bytes)` after each
/// chunk (bytes: 0 when they are not the input's own, i.e. decompressed).
pub(crate) fn stream_one<S: Stage>(
    input: Opened,
    opts: &InputOptions,
    seed: u64,
    stage: &S,
    consume: &mut dyn FnMut(S::Out) -> Result<(), S::Error>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<InputSummary, S::Error> {
    let shown = input.shown.clone();
    let compression = input.compression;
    let exact_bytes = compression == source::Compression::None;
    let plan = plan(&input, opts)?;
    // A query's keys of another byte form than the filter's would all be answered "absent".
    if let Some(filter) = opts.filter_key_type {
        if filter.check_query(plan.key_type) == KeyMatch::Mismatch {
            return Err(Error::KeyType {
                path: shown.clone(),
                filter,
                query: plan.key_type,
            }
            .into());
        }
    }
    let parser = plan.parser.clone();
    let note = plan.note.clone();
    let mut summary = InputSummary {
        path: shown.clone(),
        format: plan.format.name(),
        compression: compression.name(),
        key_type: plan.key_type,
        ..InputSummary::default()
    };
    let mut lines_before = plan.start_lines;
    let work = |chunk: &Chunk, scratch: &mut Scratch| -> Result<ChunkResult<S::Out>, S::Error> {
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
    summary.warnings = note.into_iter().chain(end.warnings).collect();
    Ok(summary)
}

/// Collects keys (their bytes) into key-set builders, one per chunk.
#[derive(Clone, Copy, Debug, Default)]
pub struct Collect;

impl Stage for Collect {
    type Out = KeySetBuilder;
    type Error = Error;

    fn keep(&self) -> Keep {
        Keep::Bytes
    }

    fn flush(&self, keys: BatchKeys<'_>, out: &mut KeySetBuilder) -> Result<()> {
        for &v in keys.ints() {
            out.push_u64(v);
        }
        let batch = keys.batch();
        for s in &batch.shown {
            match *s {
                Shown::Text(a, b) => {
                    out.push_bytes(&batch.arena[a as usize..b as usize], KeyKind::Text)
                }
                Shown::Tuple(a, b) => {
                    out.push_bytes(&batch.arena[a as usize..b as usize], KeyKind::Tuples)
                }
                Shown::Int(v) => out.push_u64(v),
                Shown::Typed(a, b, t) => out.push_typed(&batch.arena[a as usize..b as usize], t),
            }
        }
        Ok(())
    }
}

/// Sketches the distinct keys of each chunk (hashed under seed 0).
struct CountStage;

impl Stage for CountStage {
    type Out = Option<Box<Hll>>;
    type Error = Error;

    fn flush(&self, keys: BatchKeys<'_>, out: &mut Self::Out) -> Result<()> {
        let h = out.get_or_insert_with(Default::default);
        match keys.keys() {
            Keys::Hashes(hs) => h.add_all(hs),
            _ => {
                for &v in keys.ints() {
                    h.add(bloomlanes_core::xxh64_u64(v, 0));
                }
            }
        }
        Ok(())
    }
}

/// Counts the distinct keys of `paths` in one streaming pass (HyperLogLog, relative standard
/// error [`Hll::STANDARD_ERROR`]): the estimate and what each input gave.
pub fn count_distinct(
    paths: &[PathBuf],
    opts: &InputOptions,
    progress: &mut dyn FnMut(StreamProgress),
) -> Result<(f64, Vec<InputSummary>)> {
    let mut hll = Hll::new();
    let inputs = stream_keys(
        paths,
        opts,
        0,
        &CountStage,
        &mut |h| {
            if let Some(h) = h {
                hll.merge(&h);
            }
            Ok(())
        },
        progress,
    )?;
    Ok((hll.estimate(), inputs))
}
