//! Building and querying filters from streamed inputs: the keys are parsed, hashed and inserted
//! or probed chunk by chunk on every core ([`crate::input::pipeline`]), never held whole.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use bloomlanes_core::key::{float_probes, float_probes_f32, FloatProbe};
use bloomlanes_core::{Filter, FilterRef, KeyMatch, KeyType, Keys, Physical};
use bloomlanes_simd::Probe;

use crate::backend::{self, Backend, BackendChoice, Querier};
use crate::builder::FilterBuilder;
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::hll::Hll;
use crate::input::{self, write_u64, Batch, InputOptions, InputSummary, Keep, Stage};
use crate::store::FilterFile;

/// How a filter's capacity was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CapacitySource {
    /// Given by the caller (`--capacity`).
    Given(u64),
    /// Counted: a first pass over the inputs estimated `estimate` distinct keys with a
    /// HyperLogLog sketch (relative standard error [`Hll::STANDARD_ERROR`]), and the capacity is
    /// that plus 2 % (about 2.5 standard errors), so that the filter is rarely undersized.
    Counted {
        /// Estimated distinct keys.
        estimate: f64,
        /// The capacity used.
        capacity: u64,
    },
}

impl CapacitySource {
    /// The capacity.
    pub fn capacity(&self) -> u64 {
        match *self {
            CapacitySource::Given(c) => c,
            CapacitySource::Counted { capacity, .. } => capacity,
        }
    }

    /// A sentence for people.
    pub fn describe(&self) -> String {
        match *self {
            CapacitySource::Given(c) => format!("capacity {c} keys (given)"),
            CapacitySource::Counted { estimate, capacity } => format!(
                "capacity {capacity} keys (a first pass estimated {estimate:.0} distinct keys, ±{:.1}% standard error, HyperLogLog; +2%)",
                Hll::STANDARD_ERROR * 100.0
            ),
        }
    }
}

/// A filter built from streamed inputs.
#[derive(Debug)]
pub struct StreamBuilt {
    /// The filter.
    pub filter: Filter,
    /// What each input gave.
    pub inputs: Vec<InputSummary>,
    /// How the capacity was chosen.
    pub capacity: CapacitySource,
    /// The engine that inserted.
    pub engine: String,
    /// Seconds of the insert pass (reading, parsing, hashing and inserting).
    pub seconds: f64,
}

struct CountStage;

impl Stage for CountStage {
    type Out = Option<Box<Hll>>;
    fn flush(&self, keys: Keys<'_>, _b: &Batch, ints: &[u64], out: &mut Self::Out) -> Result<()> {
        let h = out.get_or_insert_with(Default::default);
        match keys {
            Keys::Hashes(hs) => h.add_all(hs),
            _ => {
                for &v in ints {
                    h.add(bloomlanes_core::xxh64_u64(v, 0));
                }
            }
        }
        Ok(())
    }
}

/// Counts the distinct keys of `paths` in one streaming pass (HyperLogLog).
pub fn count_distinct(
    paths: &[PathBuf],
    opts: &InputOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(f64, Vec<InputSummary>)> {
    let mut hll = Hll::new();
    let inputs = input::stream_keys_as(
        Doing::Count,
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

/// The insert engine of a streamed build.
enum Inserter {
    /// A SIMD path on each worker, into private copies of the filter when memory allows (see
    /// [`Target::Copies`]), else under the filter's lock.
    Simd(Probe),
    /// The scalar reference on each worker, under the filter's lock.
    Scalar,
    /// Another backend (the GPU): the workers parse and hash, the calling thread inserts each
    /// chunk's hashes.
    Deferred,
}

/// A small number that differs between the threads of a process (for spreading them over
/// filter copies).
fn thread_slot() -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish() as usize
}

/// The filter as the workers see it.
enum Target<'f> {
    /// Copies of the empty filter, each behind its own lock, ORed into the filter at the end
    /// (the SIMD engine; bits are those of any order, since OR commutes). A worker inserts into
    /// whichever copy is free, so workers rarely wait; the copies are as many as the workers,
    /// within [`COPY_BUDGET`] bytes in all (one copy when the filter is that large).
    Copies(Probe, Vec<Mutex<Filter>>),
    /// Behind a lock (the scalar engine, and the deferred one's calling thread).
    Locked(Mutex<&'f mut Filter>),
}

/// Bytes of filter copies a streamed build may add (issue #12's memory bound: 256 MiB beyond
/// the filter, of which the pipeline's chunks take up to 32 MiB).
const COPY_BUDGET: u64 = 192 << 20;

/// How many private copies a build with `threads` workers makes of a filter of `bytes` bytes.
fn copies_for(threads: usize, bytes: u64) -> usize {
    (COPY_BUDGET / bytes.max(1)).min(threads as u64).max(1) as usize
}

struct InsertStage<'f> {
    engine: Inserter,
    target: Target<'f>,
    seed: u64,
}

/// Hashes of one chunk, for a backend that inserts or probes on the calling thread.
#[derive(Debug, Default)]
struct Hashes(Vec<u64>);

/// The hashes of a batch (binary u64 keys are hashed here).
fn hashes_of(keys: Keys<'_>, ints: &[u64], seed: u64, out: &mut Vec<u64>) {
    match keys {
        Keys::Hashes(h) => out.extend_from_slice(h),
        _ => out.extend(ints.iter().map(|&v| bloomlanes_core::xxh64_u64(v, seed))),
    }
}

impl Stage for InsertStage<'_> {
    type Out = Hashes;
    fn flush(&self, keys: Keys<'_>, _b: &Batch, ints: &[u64], out: &mut Hashes) -> Result<()> {
        match (&self.engine, &self.target) {
            (Inserter::Deferred, _) => hashes_of(keys, ints, self.seed, &mut out.0),
            (_, Target::Copies(p, copies)) => {
                // The first free copy, starting from a place that differs between threads.
                let start = thread_slot() % copies.len();
                let mut f = (0..copies.len())
                    .find_map(|i| copies[(start + i) % copies.len()].try_lock().ok())
                    .unwrap_or_else(|| copies[start].lock().unwrap_or_else(|p| p.into_inner()));
                p.insert(f.as_view_mut(), keys);
            }
            (Inserter::Simd(p), Target::Locked(f)) => {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                p.insert(f.as_view_mut(), keys);
            }
            (_, Target::Locked(f)) => {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                let mut view = f.as_view_mut();
                for i in 0..keys.len() {
                    view.insert_hash(keys.hash(i, self.seed));
                }
            }
        }
        Ok(())
    }
}

/// An insert engine, its name, and the backend of a deferred engine.
type InsertEngine = (Inserter, String, Option<Box<dyn Backend>>);

/// The per-worker insert engine for `choice`, its name, and the backend of a deferred engine.
fn inserter(choice: BackendChoice, threads: usize) -> Result<InsertEngine> {
    Ok(match choice {
        BackendChoice::Auto | BackendChoice::Simd => {
            let p = Probe::active();
            let name = format!("simd-{} ({threads} threads)", p.path().name());
            (Inserter::Simd(p), name, None)
        }
        BackendChoice::Scalar => (
            Inserter::Scalar,
            format!("scalar ({threads} threads)"),
            None,
        ),
        c => {
            let b = backend::select(c, 0)?;
            let name = b.name();
            (Inserter::Deferred, name, Some(b))
        }
    })
}

/// Builds a filter from the keys of `paths`, streamed. Without a capacity in `builder`, a first
/// pass counts the distinct keys (the inputs must then be regular files: standard input and
/// pipes cannot be read twice).
pub fn build_stream(
    builder: &FilterBuilder,
    paths: &[PathBuf],
    opts: &InputOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<StreamBuilt> {
    let capacity = match builder.capacity_given() {
        Some(c) => CapacitySource::Given(c),
        None => {
            if let Some(p) = paths.iter().find(|p| !reopenable(p)) {
                let name = input::source::shown_name(p);
                return Err(Error::usage(format!(
                    "{} cannot be read twice (standard input or a pipe): give --capacity N, the number of distinct keys to size the filter for",
                    name.display()
                )));
            }
            let (estimate, _) = count_distinct(paths, opts, progress)?;
            let capacity = ((estimate * 1.02).ceil() as u64).max(1);
            CapacitySource::Counted { estimate, capacity }
        }
    };
    let sized = builder.clone().capacity(Some(capacity.capacity()));
    let mut filter = sized.empty(capacity.capacity())?;
    let (engine, name, deferred) = inserter(builder.backend_choice(), opts.pipeline.threads)?;
    let seed = filter.seed();
    let start = Instant::now();
    let mut keys = 0u64;
    let inputs = {
        let copies = copies_for(opts.pipeline.threads, filter.words().len() as u64 * 4);
        let target = match &engine {
            Inserter::Simd(p) if copies > 1 => Target::Copies(
                *p,
                (0..copies).map(|_| Mutex::new(filter.clone())).collect(),
            ),
            _ => Target::Locked(Mutex::new(&mut filter)),
        };
        let stage = InsertStage {
            engine,
            target,
            seed,
        };
        let consume = &mut |h: Hashes| -> Result<()> {
            if let (Some(b), false, Target::Locked(f)) = (&deferred, h.0.is_empty(), &stage.target)
            {
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                let before = f.key_count();
                b.insert(&mut f, Keys::Hashes(&h.0))?;
                // The count is added once at the end, as for the other engines.
                f.set_key_count(before);
            }
            Ok(())
        };
        let inputs =
            input::stream_keys_as(Doing::Insert, paths, opts, seed, &stage, consume, progress)?;
        if let Target::Copies(_, copies) = stage.target {
            // The union's key-count rule does not apply: the keys are counted below.
            let count = filter.key_count();
            for c in copies {
                let c = c.into_inner().unwrap_or_else(|p| p.into_inner());
                filter
                    .union_with(&c)
                    .map_err(|e| Error::usage(e.to_string()))?;
            }
            filter.set_key_count(count);
        }
        inputs
    };
    for i in &inputs {
        keys += i.keys;
    }
    filter.add_key_count(keys);
    filter.set_key_type(input::one_key_type(&inputs)?);
    Ok(StreamBuilt {
        filter,
        inputs,
        capacity,
        engine: name,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Whether `path` can be read a second time: not standard input, a pipe or a device (a path
/// that cannot be opened at all fails with its own error when it is read).
fn reopenable(path: &std::path::Path) -> bool {
    path.as_os_str() != "-" && std::fs::metadata(path).map_or(true, |m| m.is_file() || m.is_dir())
}

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

enum Prober<'a> {
    /// A SIMD path on each worker.
    Simd(Probe, FilterRef<'a, u32>),
    /// The scalar reference on each worker.
    Scalar(FilterRef<'a, u32>),
    /// Another backend (the GPU) on the calling thread: the workers hand on hashes and texts.
    Deferred,
}

struct QueryStage<'a> {
    prober: Prober<'a>,
    listing: Listing,
    seed: u64,
    /// The filter, when its keys are floats: the ±0 / NaN probe rule applies.
    floats: Option<(FilterRef<'a, u32>, bool)>,
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
    floats: Option<(FilterRef<'_, u32>, bool)>,
    n: usize,
    words: &mut [u64],
    bits_of: impl Fn(usize) -> Option<u64>,
) {
    let Some((view, double)) = floats else {
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
                view.contains(&f64::from_bits(b))
            } else {
                view.contains(&f32::from_bits(b as u32))
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
    let seed = view.params().seed;
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
    let filter_type = view.params().key_type;
    let view_path = filter.path();
    let floats = match filter_type.physical() {
        Physical::Double => Some((view, true)),
        Physical::Float => Some((view, false)),
        _ => None,
    };
    let stage = QueryStage {
        prober,
        listing,
        seed,
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
        seed,
        &stage,
        &mut |mut c: QueryChunk| {
            if let Some(q) = querier.as_mut() {
                c = answer_deferred(&mut **q, c, listing, floats)?;
            }
            keys += c.keys;
            matches += c.matches;
            on_chunk(&c)
        },
        progress,
    )
    .map_err(|e| match e {
        Error::KeyType { filter, query, .. } => Error::KeyType {
            path: view_path.to_path_buf(),
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
        engine: name,
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
    floats: Option<(FilterRef<'_, u32>, bool)>,
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

/// Writes a stream of answer bits (LSB first) as bytes, chunk after chunk.
#[derive(Debug, Default)]
pub struct BitWriter {
    /// Bits not yet written (fewer than 8).
    pending: u8,
    pending_bits: u32,
}

impl BitWriter {
    /// Appends the first `n` bits of `words` to `w`.
    pub fn write(&mut self, w: &mut dyn Write, words: &[u64], n: usize) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(n / 8 + 2);
        for i in 0..n {
            let bit = ((words[i / 64] >> (i % 64)) & 1) as u8;
            self.pending |= bit << self.pending_bits;
            self.pending_bits += 1;
            if self.pending_bits == 8 {
                bytes.push(self.pending);
                self.pending = 0;
                self.pending_bits = 0;
            }
        }
        w.write_all(&bytes)
    }

    /// Writes the last partial byte (zero-padded).
    pub fn finish(&mut self, w: &mut dyn Write) -> io::Result<()> {
        if self.pending_bits > 0 {
            w.write_all(&[self.pending])?;
            self.pending = 0;
            self.pending_bits = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn builds_copy_small_filters_once_per_worker_within_the_budget() {
        assert_eq!(copies_for(16, 1 << 20), 16);
        assert_eq!(copies_for(2, 1 << 20), 2);
        assert_eq!(copies_for(16, 60 << 20), 3);
        assert_eq!(copies_for(16, 1 << 30), 1);
        assert_eq!(copies_for(1, 1), 1);
        assert_eq!(copies_for(8, 0), 8);
    }
}
