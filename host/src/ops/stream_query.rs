//! Querying filters from streamed inputs: the keys are parsed, hashed and probed chunk by chunk
//! on every core ([`crate::input::pipeline`]) and their answers handed on in input order, never
//! held whole. A static filter is probed in its file; a counting, stable, window or scalable
//! filter in memory, with its kind's lookups.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bloomlanes_core::key::{float_probes, float_probes_f32, FloatProbe};
use bloomlanes_core::{AnyFilter, FilterRef, KeyMatch, KeyType, Keys, Physical};
use bloomlanes_simd::Probe;

use super::stream::hashes_of;
use crate::backend::{self, BackendChoice, Querier};
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::input::{self, write_u64, Batch, InputOptions, InputSummary, Keep, Stage};
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

/// The filter a streamed query probes.
#[derive(Clone, Copy)]
enum Probed<'a> {
    /// A static filter's image.
    Image(FilterRef<'a, u32>),
    /// A filter of another kind, in memory.
    Kind(&'a AnyFilter),
}

impl Probed<'_> {
    /// Whether the filter may hold the double with these bits.
    fn has_f64(self, bits: u64) -> bool {
        match self {
            Probed::Image(v) => v.contains(&f64::from_bits(bits)),
            Probed::Kind(f) => f.contains(&f64::from_bits(bits)),
        }
    }

    /// Whether the filter may hold the float with these bits.
    fn has_f32(self, bits: u32) -> bool {
        match self {
            Probed::Image(v) => v.contains(&f32::from_bits(bits)),
            Probed::Kind(f) => f.contains(&f32::from_bits(bits)),
        }
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
    /// The filter, when its keys are floats: the ±0 / NaN probe rule applies.
    floats: Option<(Probed<'a>, bool)>,
}

impl QueryStage<'_> {
    /// Applies the float lookup rule (see [`super::apply_float_probes`]) to the answers `words`
    /// of a batch: a key `0.0` or `-0.0` may be present if either zero is, and NaN is always
    /// "may be present".
    fn float_rule(&self, batch: &Batch, ints: &[u64], n: usize, words: &mut [u64]) {
        float_rule(self.floats, n, words, |i| {
            if ints.is_empty() {
                batch.key_bits(i)
            } else {
                Some(ints[i])
            }
        });
    }
}

/// The float lookup rule on the answers `words` of `n` keys whose bits `bits_of` gives (`None`:
/// not a float key), for a filter of floats (`floats`: the filter and whether they are f64).
fn float_rule(
    floats: Option<(Probed<'_>, bool)>,
    n: usize,
    words: &mut [u64],
    bits_of: impl Fn(usize) -> Option<u64>,
) {
    let Some((probed, double)) = floats else {
        return;
    };
    for i in 0..n {
        let Some(bits) = bits_of(i) else { continue };
        let probe = if double {
            float_probes(f64::from_bits(bits))
        } else {
            float_probes_f32(f32::from_bits(bits as u32))
        };
        let hit = |b: u64| {
            if double {
                probed.has_f64(b)
            } else {
                probed.has_f32(b as u32)
            }
        };
        let answer = match probe {
            FloatProbe::Bits(_) => continue,
            FloatProbe::AlwaysMaybe => true,
            FloatProbe::BothZeros(a, b) => hit(a) || hit(b),
        };
        let bit = 1u64 << (i % 64);
        if answer {
            words[i / 64] |= bit;
        } else {
            words[i / 64] &= !bit;
        }
    }
}

impl Stage for QueryStage<'_> {
    type Out = QueryChunk;

    fn keep(&self) -> Keep {
        if self.listing.keys.is_some() || self.floats.is_some() {
            Keep::Text
        } else {
            Keep::Nothing
        }
    }

    fn flush(
        &self,
        keys: Keys<'_>,
        batch: &Batch,
        ints: &[u64],
        out: &mut QueryChunk,
    ) -> Result<()> {
        let n = keys.len();
        if let Prober::Deferred = self.prober {
            hashes_of(keys, ints, self.seed, &mut out.deferred);
            if self.floats.is_some() {
                for i in 0..n {
                    out.float_bits.push(if ints.is_empty() {
                        batch.key_bits(i)
                    } else {
                        Some(ints[i])
                    });
                }
            }
            if self.listing.keys.is_some() {
                for i in 0..n {
                    if ints.is_empty() {
                        batch.write_key(i, self.listing.json, &mut out.text);
                    } else {
                        write_u64(ints[i], self.listing.json, &mut out.text);
                    }
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
        self.float_rule(batch, ints, n, &mut words);
        let matches: u64 = words.iter().map(|w| u64::from(w.count_ones())).sum();
        if let Some(want) = self.listing.keys {
            for i in 0..n {
                if (words[i / 64] >> (i % 64)) & 1 == u64::from(want) {
                    if self.listing.json && !out.text.is_empty() {
                        out.text.extend_from_slice(b",\n    ");
                    }
                    if ints.is_empty() {
                        batch.write_key(i, self.listing.json, &mut out.text);
                    } else {
                        write_u64(ints[i], self.listing.json, &mut out.text);
                    }
                    if !self.listing.json {
                        out.text.push(b'\n');
                    }
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

/// Probes the keys of `paths` against `filter`, streamed; `on_chunk` gets each chunk's answers
/// in input order (to print them or write a bitmap).
pub fn query_stream(
    filter: &FilterFile,
    paths: &[PathBuf],
    opts: &InputOptions,
    choice: BackendChoice,
    listing: Listing,
    on_chunk: &mut dyn FnMut(&QueryChunk) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamQueried> {
    super::check_hashable(filter)?;
    if let Some(bound) = keys_bound(paths) {
        filter.advise_lookups(usize::try_from(bound).unwrap_or(usize::MAX));
    }
    let view = filter.view();
    let threads = opts.pipeline.threads;
    let engine;
    let mut querier: Option<Box<dyn Querier + '_>> = None;
    let (prober, name) = match choice {
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
    let plan = Plan {
        prober,
        name,
        probed: Probed::Image(view),
        key_type: view.params().key_type,
        seed: view.params().seed,
        path: filter.path(),
        mapped: Some(filter),
    };
    run(plan, querier, paths, opts, listing, on_chunk, progress)
}

/// [`query_stream`] for a counting, stable, window or scalable filter in memory (a static
/// filter in an [`AnyFilter`] too), read from `path`: each worker looks its chunk up with the
/// kind's SIMD lookups (`choice` auto or SIMD) or the core's key by key (scalar). Other
/// backends are refused (read the keys whole and use [`crate::kinds::ops::contains`]).
#[allow(clippy::too_many_arguments)]
pub fn query_stream_kind(
    filter: &AnyFilter,
    path: &Path,
    paths: &[PathBuf],
    opts: &InputOptions,
    choice: BackendChoice,
    listing: Listing,
    on_chunk: &mut dyn FnMut(&QueryChunk) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamQueried> {
    let threads = opts.pipeline.threads;
    let (probe, name) = match choice {
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
    let plan = Plan {
        prober: Prober::Kind(probe, filter),
        name,
        probed: Probed::Kind(filter),
        key_type: filter.params().key_type,
        seed: filter.params().seed,
        path,
        mapped: None,
    };
    run(plan, None, paths, opts, listing, on_chunk, progress)
}

/// What a streamed query runs: the prober, the engine's name, the filter and its file.
struct Plan<'a> {
    prober: Prober<'a>,
    name: String,
    probed: Probed<'a>,
    key_type: KeyType,
    seed: u64,
    path: &'a Path,
    /// The mapped file the answers come from: checked whole before each chunk's answers are
    /// handed on ([`FilterFile::check_unchanged`]).
    mapped: Option<&'a FilterFile>,
}

/// Streams the keys of `paths` through `plan`'s prober (answering deferred chunks with
/// `querier` on this thread) and hands each chunk's answers to `on_chunk`, in input order.
fn run(
    plan: Plan<'_>,
    mut querier: Option<Box<dyn Querier + '_>>,
    paths: &[PathBuf],
    opts: &InputOptions,
    listing: Listing,
    on_chunk: &mut dyn FnMut(&QueryChunk) -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamQueried> {
    let filter_type = plan.key_type;
    let floats = match filter_type.physical() {
        Physical::Double => Some((plan.probed, true)),
        Physical::Float => Some((plan.probed, false)),
        _ => None,
    };
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
    let inputs = input::stream_keys_as(
        Doing::Query,
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
        progress,
    )
    .map_err(|e| match e {
        Error::KeyType { filter, query, .. } => Error::KeyType {
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
    floats: Option<(Probed<'_>, bool)>,
) -> Result<QueryChunk> {
    let n = c.deferred.len();
    let mut words = vec![0u64; n.div_ceil(64)];
    q.contains(Keys::Hashes(&c.deferred), &mut words)?;
    if !c.float_bits.is_empty() {
        float_rule(floats, n, &mut words, |i| c.float_bits[i]);
    }
    let mut out = QueryChunk::default();
    if let Some(want) = listing.keys {
        let mut start = 0usize;
        for (i, &end) in c.ends.iter().enumerate() {
            let end = end as usize;
            if (words[i / 64] >> (i % 64)) & 1 == u64::from(want) {
                if listing.json && !out.text.is_empty() {
                    out.text.extend_from_slice(b",\n    ");
                }
                out.text.extend_from_slice(&c.text[start..end]);
                if !listing.json {
                    out.text.push(b'\n');
                }
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
