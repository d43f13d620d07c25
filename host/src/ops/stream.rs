//! Building and querying filters from streamed inputs: the keys are parsed, hashed and inserted
//! or probed chunk by chunk on every core ([`crate::input::pipeline`]), never held whole.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use bloomlanes_core::{Filter, Keys};
use bloomlanes_simd::Probe;

use crate::backend::{self, Backend, BackendChoice};
use crate::builder::FilterBuilder;
use crate::bulk::{Progress, Stage as Doing};
use crate::error::{Error, Result};
use crate::hll::Hll;
use crate::input::{self, BatchKeys, InputOptions, InputSummary, KeySet, Stage};

pub use super::stream_ordered::{
    insert_streamed, stream_hashes, stream_hashes_with_text, KeyText, ORDERED_BATCH,
};
pub use super::stream_query::{
    query_stream, query_stream_kind, Listing, QueryChunk, QueryInputs, StreamQueried,
};

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

/// Counts the distinct keys of `paths` in one streaming pass (HyperLogLog; see
/// [`input::count_distinct`]).
pub fn count_distinct(
    paths: &[PathBuf],
    opts: &InputOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(f64, Vec<InputSummary>)> {
    Ok(input::count_distinct(
        paths,
        opts,
        &mut input::reporting(Doing::Count, progress),
    )?)
}

/// The capacity a build sizes for from a first pass's distinct-key estimate: the estimate plus
/// 2 % (about 2.5 of its standard errors, [`Hll::STANDARD_ERROR`]), at least 1. Every kind
/// sizes with it, so that a static and a counting build of the same inputs with the same flags
/// get the same block count and merge.
pub fn counted_capacity(estimate: f64) -> u64 {
    ((estimate * 1.02).ceil() as u64).max(1)
}

/// The distinct keys of a key set held whole, estimated as [`count_distinct`] estimates those
/// of a streamed input (the same HyperLogLog over the same seed-0 hashes, so the same keys give
/// the same estimate however they were read, and a build that holds its keys, such as a
/// spatial filter's, sizes as a streamed one).
pub fn keyset_distinct(keys: &KeySet) -> f64 {
    let mut hll = Hll::new();
    let keys = keys.keys();
    for i in 0..keys.len() {
        hll.add(keys.hash(i, 0));
    }
    hll.estimate()
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

impl Stage for InsertStage<'_> {
    type Out = Hashes;
    type Error = Error;
    fn flush(&self, batch: BatchKeys<'_>, out: &mut Hashes) -> Result<()> {
        let keys = batch.keys();
        match (&self.engine, &self.target) {
            (Inserter::Deferred, _) => batch.hashes_into(self.seed, &mut out.0),
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
            let capacity = counted_capacity(estimate);
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
        let inputs = input::stream_keys(
            paths,
            opts,
            seed,
            &stage,
            consume,
            &mut input::reporting(Doing::Insert, progress),
        )?;
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
pub fn reopenable(path: &std::path::Path) -> bool {
    path.as_os_str() != "-" && std::fs::metadata(path).map_or(true, |m| m.is_file() || m.is_dir())
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
    fn builds_copy_small_filters_once_per_worker_within_the_budget() {
        assert_eq!(copies_for(16, 1 << 20), 16);
        assert_eq!(copies_for(2, 1 << 20), 2);
        assert_eq!(copies_for(16, 60 << 20), 3);
        assert_eq!(copies_for(16, 1 << 30), 1);
        assert_eq!(copies_for(1, 1), 1);
        assert_eq!(copies_for(8, 0), 8);
    }
}
