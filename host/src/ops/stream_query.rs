//! Querying filters from streamed inputs: the keys are parsed, hashed and probed chunk by chunk
//! on every core ([`crate::input::pipeline`]) and their answers handed on in input order, never
//! held whole. A static filter is probed in its file; a counting, stable, window or scalable
//! filter in memory, with its kind's lookups.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bloomlanes_core::key::FloatRule;
use bloomlanes_core::{AnyFilter, FilterRef, KeyMatch, KeyType, Keys};
use bloomlanes_simd::Probe;

use crate::backend::{self, BackendChoice, Querier};
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::input::{self, BatchKeys, InputOptions, InputSummary, Keep, Stage};
use crate::store::FilterFile;

/// What a streamed query writes besides its counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// List keys: those that may be present (`true`) or those definitely absent (`false`).
    pub keys: Option<bool>,
    /// Listed keys as JSON strings, separated by `,\n    `.
    pub json: bool,
    /// Keep the answers as bits (for a bitmap file).
    pub bits: bool,
}

impl Listing {
    /// Appends one listed key, written by `write`, to `text`: JSON strings joined by
    /// `,\n    `, other keys one per line.
    fn push(&self, text: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
        if self.json && !text.is_empty() {
            text.extend_from_slice(b",\n    ");
        }
        write(text);
        if !self.json {
            text.push(b'\n');
        }
    }
}

/// The answers of one chunk of a streamed query, in input order.
#[derive(Debug, Default)]
pub struct QueryChunk {
    /// Keys probed.
    pub keys: u64,
    /// Keys that may be present.
    pub matches: u64,
    /// The listed keys: one per line, or JSON strings joined by `,\n    `.
    pub text: Vec<u8>,
    /// The answers, one bit per key (LSB first), when asked for.
    pub bits: Vec<u64>,
    /// Deferred engines: the hashes to probe, and the end of each key's text in `text`.
    deferred: Vec<u64>,
    /// Deferred engines, float filters: each key's bits, for the float lookup rule.
    float_bits: Vec<Option<u64>>,
    ends: Vec<u32>,
}

impl QueryChunk {
    fn push_bits(&mut self, words: &[u64], n: usize) {
        let at = self.keys as usize;
        let shift = at % 64;
        if shift == 0 {
            self.bits.extend_from_slice(words);
        } else {
            for &w in words {
                *self.bits.last_mut().expect("a partial word") |= w << shift;
                self.bits.push(w >> (64 - shift));
            }
        }
        self.bits.truncate((at + n).div_ceil(64));
    }
}

enum Prober<'a> {
    /// A SIMD path on each worker.
    Simd(Probe, FilterRef<'a, u32>),
    /// The scalar reference on each worker.
    Scalar(FilterRef<'a, u32>),
    /// A filter of another kind on each worker: its SIMD lookups, or the core's key by key.
    Kind(Option<Probe>, &'a AnyFilter),
    /// Another backend (the GPU) on the calling thread: the workers hand on hashes and texts.
    Deferred,
}

struct QueryStage<'a> {
    prober: Prober<'a>,
    listing: Listing,
    seed: u64,
    /// The ±0 / NaN lookup rule, when the filter's keys are floats.
    floats: Option<FloatRule>,
}

impl Stage for QueryStage<'_> {
    type Out = QueryChunk;
    type Error = Error;

    fn keep(&self) -> Keep {
        if self.listing.keys.is_some() || self.floats.is_some() {
            Keep::Text
        } else {
            Keep::Nothing
        }
    }

    fn flush(&self, batch: BatchKeys<'_>, out: &mut QueryChunk) -> Result<()> {
        let (keys, n) = (batch.keys(), batch.len());
        if let Prober::Deferred = self.prober {
            batch.hashes_into(self.seed, &mut out.deferred);
            if self.floats.is_some() {
                out.float_bits.extend((0..n).map(|i| batch.key_bits(i)));
            }
            if self.listing.keys.is_some() {
                for i in 0..n {
                    batch.write_key(i, self.listing.json, &mut out.text);
                    out.ends.push(out.text.len() as u32);
                }
            }
            return Ok(());
        }
        let mut words = vec![0u64; n.div_ceil(64)];
        match &self.prober {
            Prober::Simd(p, view) => p.contains_bitmap(*view, keys, &mut words),
            Prober::Scalar(view) => {
                for i in 0..n {
                    words[i / 64] |=
                        u64::from(view.contains_hash(keys.hash(i, self.seed))) << (i % 64);
                }
            }
            Prober::Kind(probe, filter) => {
                crate::kinds::ops::contains_words(*probe, filter, keys, &mut words)
            }
            Prober::Deferred => {}
        }
        if let Some(rule) = self.floats {
            rule.apply(n, &mut words, |i| batch.key_bits(i));
        }
        let matches: u64 = words.iter().map(|w| u64::from(w.count_ones())).sum();
        if let Some(want) = self.listing.keys {
            for i in 0..n {
                if (words[i / 64] >> (i % 64)) & 1 == u64::from(want) {
                    let json = self.listing.json;
                    self.listing
                        .push(&mut out.text, |t| batch.write_key(i, json, t));
                }
            }
        }
        if self.listing.bits {
            out.push_bits(&words, n);
        }
        out.keys += n as u64;
        out.matches += matches;
        Ok(())
    }
}

/// The totals of a streamed query.
#[derive(Clone, Debug)]
pub struct StreamQueried {
    /// What each input gave.
    pub inputs: Vec<InputSummary>,
    /// Keys probed.
    pub keys: u64,
    /// Keys that may be present.
    pub matches: u64,
    /// The engine that answered.
    pub engine: String,
    /// Seconds of the pass.
    pub seconds: f64,
    /// The key type the keys were read as.
    pub key_type: KeyType,
    /// How it compares with the filter's (never [`KeyMatch::Mismatch`]: that is an error).
    pub key_match: KeyMatch,
}

/// What a streamed query reads and how: the shared arguments of [`query_stream`] and
/// [`query_stream_kind`].
#[derive(Clone, Copy, Debug)]
pub struct QueryInputs<'a> {
    /// The input files (`-` for standard input).
    pub paths: &'a [PathBuf],
    /// How they are read (format, key type, pipeline).
    pub opts: &'a InputOptions,
    /// The backend asked for.
    pub choice: BackendChoice,
    /// What is written besides the counts.
    pub listing: Listing,
}

/// Probes the keys of `inputs.paths` against `filter`, streamed; `on_chunk` gets each chunk's
/// answers in input order (to print them or write a bitmap).
pub fn query_stream(
    filter: &FilterFile,
    inputs: QueryInputs<'_>,
    on_chunk: &mut dyn FnMut(&QueryChunk) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamQueried> {
    super::check_hashable(filter)?;
    if let Some(bound) = keys_bound(inputs.paths) {
        filter.advise_lookups(usize::try_from(bound).unwrap_or(usize::MAX));
    }
    let view = filter.view();
    let threads = inputs.opts.pipeline.threads;
    let engine;
    let mut querier: Option<Box<dyn Querier + '_>> = None;
    let (prober, name) = match inputs.choice {
        BackendChoice::Auto | BackendChoice::Simd => {
            let p = Probe::active();
            let name = format!("simd-{} ({threads} threads)", p.path().name());
            (Prober::Simd(p, view), name)
        }
        BackendChoice::Scalar => (Prober::Scalar(view), format!("scalar ({threads} threads)")),
        c => {
            engine = backend::select(c, 0)?;
            querier = Some(engine.querier(view)?);
            (Prober::Deferred, engine.name())
        }
    };
    let (key_type, seed) = (view.params().key_type, view.params().seed);
    let plan = Plan {
        prober,
        name,
        floats: FloatRule::new(key_type, seed, |h| view.contains_hash(h)),
        key_type,
        seed,
        path: filter.path(),
        mapped: Some(filter),
    };
    run(plan, querier, inputs, on_chunk, progress)
}

/// [`query_stream`] for a counting, stable, window or scalable filter in memory (a static
/// filter in an [`AnyFilter`] too), read from `path`: each worker looks its chunk up with the
/// kind's SIMD lookups (`choice` auto or SIMD) or the core's key by key (scalar). Other
/// backends are refused (read the keys whole and use [`crate::kinds::ops::contains`]).
pub fn query_stream_kind(
    filter: &AnyFilter,
    path: &Path,
    inputs: QueryInputs<'_>,
    on_chunk: &mut dyn FnMut(&QueryChunk) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamQueried> {
    let threads = inputs.opts.pipeline.threads;
    let (probe, name) = match inputs.choice {
        BackendChoice::Auto | BackendChoice::Simd => {
            let p = Probe::active();
            (
                Some(p),
                format!("simd-{} ({threads} threads)", p.path().name()),
            )
        }
        BackendChoice::Scalar => (None, format!("scalar ({threads} threads)")),
        c => {
            return Err(Error::usage(format!(
                "a streamed query of a {} filter runs on the SIMD or scalar backend, not {c:?}",
                filter.params().kind.name()
            )))
        }
    };
    let (key_type, seed) = (filter.params().key_type, filter.params().seed);
    let plan = Plan {
        prober: Prober::Kind(probe, filter),
        name,
        floats: FloatRule::new(key_type, seed, |h| filter.contains_hash(h)),
        key_type,
        seed,
        path,
        mapped: None,
    };
    run(plan, None, inputs, on_chunk, progress)
}

/// What a streamed query runs: the prober, the engine's name, the filter's float rule, key
/// type and seed, and its file.
struct Plan<'a> {
    prober: Prober<'a>,
    name: String,
    floats: Option<FloatRule>,
    key_type: KeyType,
    seed: u64,
    path: &'a Path,
    /// The mapped file the answers come from: checked whole before each chunk's answers are
    /// handed on ([`FilterFile::check_unchanged`]).
    mapped: Option<&'a FilterFile>,
}

/// Streams the keys of `inputs.paths` through `plan`'s prober (answering deferred chunks with
/// `querier` on this thread) and hands each chunk's answers to `on_chunk`, in input order.
fn run(
    plan: Plan<'_>,
    mut querier: Option<Box<dyn Querier + '_>>,
    inputs: QueryInputs<'_>,
    on_chunk: &mut dyn FnMut(&QueryChunk) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamQueried> {
    let QueryInputs {
        paths,
        opts,
        listing,
        ..
    } = inputs;
    let filter_type = plan.key_type;
    let floats = plan.floats;
    let stage = QueryStage {
        prober: plan.prober,
        listing,
        seed: plan.seed,
        floats,
    };
    // Text is read as the filter's key type unless told otherwise; keys of another byte form
    // are refused before any is probed (see `input::stream`'s plan).
    let mut opts = opts.clone();
    opts.filter_key_type.get_or_insert(filter_type);
    let opts = &opts;
    let start = Instant::now();
    let (mut keys, mut matches) = (0, 0);
    let inputs = input::stream_keys(
        paths,
        opts,
        plan.seed,
        &stage,
        &mut |mut c: QueryChunk| {
            if let Some(q) = querier.as_mut() {
                c = answer_deferred(&mut **q, c, listing, floats)?;
            }
            if let Some(f) = plan.mapped {
                f.check_unchanged()?;
            }
            keys += c.keys;
            matches += c.matches;
            on_chunk(&c)
        },
        &mut input::reporting(Doing::Query, progress),
    )
    .map_err(|e| match e {
        // Named after the filter, not the input: it is the filter's type the keys miss.
        Error::Read {
            source: input::Error::KeyType { filter, query, .. },
        } => Error::KeyType {
            path: plan.path.to_path_buf(),
            filter,
            query,
        },
        e => e,
    })?;
    let key_type = input::one_key_type(&inputs)?;
    Ok(StreamQueried {
        inputs,
        keys,
        matches,
        engine: plan.name,
        seconds: start.elapsed().as_secs_f64(),
        key_type,
        key_match: filter_type.check_query(key_type),
    })
}

/// An upper bound on the keys of `paths` (a key takes at least one byte) when every one is a
/// regular, uncompressed file; `None` for standard input, pipes and compressed files. Few
/// lookups into a large filter file then turn off its read-ahead
/// ([`FilterFile::advise_lookups`]).
fn keys_bound(paths: &[PathBuf]) -> Option<u64> {
    use std::io::Read;
    let mut total = 0u64;
    for p in paths {
        if p.as_os_str() == "-" {
            return None;
        }
        let meta = std::fs::metadata(p).ok().filter(|m| m.is_file())?;
        let mut head = [0u8; 8];
        let n = std::fs::File::open(p).ok()?.read(&mut head).ok()?;
        if input::Compression::detect(&head[..n]) != input::Compression::None {
            return None;
        }
        total = total.saturating_add(meta.len());
    }
    Some(total)
}

/// Probes a chunk's hashes on the calling thread and makes its answers.
fn answer_deferred(
    q: &mut dyn Querier,
    c: QueryChunk,
    listing: Listing,
    floats: Option<FloatRule>,
) -> Result<QueryChunk> {
    let n = c.deferred.len();
    let mut words = vec![0u64; n.div_ceil(64)];
    q.contains(Keys::Hashes(&c.deferred), &mut words)?;
    if let (Some(rule), false) = (floats, c.float_bits.is_empty()) {
        rule.apply(n, &mut words, |i| c.float_bits[i]);
    }
    let mut out = QueryChunk::default();
    if let Some(want) = listing.keys {
        let mut start = 0usize;
        for (i, &end) in c.ends.iter().enumerate() {
            let end = end as usize;
            if (words[i / 64] >> (i % 64)) & 1 == u64::from(want) {
                listing.push(&mut out.text, |t| t.extend_from_slice(&c.text[start..end]));
            }
            start = end;
        }
    }
    if listing.bits {
        out.push_bits(&words, n);
    }
    out.keys = n as u64;
    out.matches = words.iter().map(|w| u64::from(w.count_ones())).sum();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::stream::BitWriter;
    use super::*;

    #[test]
    fn chunk_bits_concatenate() {
        let mut c = QueryChunk::default();
        // 3 keys: 1 0 1, then 70 keys all 1.
        c.push_bits(&[0b101], 3);
        c.keys = 3;
        c.push_bits(&[u64::MAX, 0x3f], 70);
        c.keys = 73;
        assert_eq!(c.bits.len(), 2);
        assert_eq!(c.bits[0], 0b101 | (u64::MAX << 3));
        assert_eq!(c.bits[1], (1 << 9) - 1);
        let mut w = BitWriter::default();
        let mut out = Vec::new();
        w.write(&mut out, &c.bits, 73).unwrap();
        w.finish(&mut out).unwrap();
        assert_eq!(out.len(), 10);
        assert_eq!(out[0], 0b1111_1101);
        assert_eq!(out[9], 0b1);
    }
}
