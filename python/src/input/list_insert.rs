//! `Filter.insert` of a list or tuple of text keys in one pass per piece: each thread of the call
//! walks a piece of the sequence (`direct.rs`), hashes it into a buffer that stays in L1 and
//! inserts those hashes at once into its own zeroed copy of the filter's words; the copies are
//! OR'd into the filter at the end, under its write lock and with the GIL released. No hash
//! buffer of the whole list is written and read back, the threads start while the caller holds
//! the GIL (no wait for the pool), and the filter is untouched until every key has been read, so
//! the first bad key fails the call with nothing inserted, as on the other paths. The words end
//! up exactly as after inserting the keys' hashes one by one (OR does not depend on the order).
//!
//! Taken where the copies cost less than the hash buffer they replace: filters of at most
//! [`COPY_MAX_L2S`] L2 caches whose copies (one per thread) are smaller than 8 bytes a key.

use std::sync::atomic::{AtomicU64, Ordering};

use bloomlanes_core::{Filter, KeyType, Keys, Params};
use bloomlanes_simd::{CacheSizes, Probe};
use pyo3::prelude::*;
use rayon::prelude::*;

use super::direct::{on_threads, TextSeq};
use super::items::text_key_type;
use super::list_contains::same_shape;
use crate::errors::Error;
use crate::filter::PyFilter;
use crate::ops::Threads;

/// Keys per piece: their hashes (16 KiB) stay in L1 between the walk and the insert.
pub(super) const PIECE: usize = 2048;

/// Keys per thread, at least: a shorter list is read by fewer threads (starting one costs as
/// much as reading a few thousand keys).
pub(super) const KEYS_PER_THREAD: usize = 16 * 1024;

/// Copies are made of filters of at most this many L2 caches (as the SIMD crate's all-core
/// insert does): a thread's inserts into a copy that fits its L2 hit it.
const COPY_MAX_L2S: u64 = 4;

/// Slices per thread of the final OR of the copies into the filter.
const MERGE_SLICES_PER_THREAD: usize = 4;

/// How many inserts of this process took this path.
static ONE_PASS: AtomicU64 = AtomicU64::new(0);

/// How many `Filter.insert` calls of this process inserted a list or tuple in one pass (this
/// file's path). Not part of the package's interface: for the tests.
#[pyfunction]
pub(crate) fn _list_inserts_in_one_pass() -> u64 {
    ONE_PASS.load(Ordering::Relaxed)
}

/// What a thread of the walk keeps: its copy of the filter (made at its first piece), its hash
/// buffer, and the indices it left to the C API.
struct Worker {
    copy: Option<Filter>,
    hashes: Vec<u64>,
    left: Vec<usize>,
    /// Its copy could not be allocated.
    failed: bool,
}

impl Worker {
    fn new() -> Worker {
        Worker {
            copy: None,
            hashes: Vec::new(),
            left: Vec::new(),
            failed: false,
        }
    }
}

/// A sequence's keys inserted into copies of a filter's words, not yet into the filter.
struct Staged {
    key_type: KeyType,
    keys: u64,
    copies: Vec<Filter>,
}

impl PyFilter {
    /// Inserts `keys` as described in the module documentation if they are a list or tuple of
    /// text that the walk reads and the filter is small enough for copies; `false` (nothing
    /// done, the caller takes the general path) otherwise, or if the filter's shape or seed
    /// changed while the keys were read.
    pub(crate) fn insert_list(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyAny>,
        threads: &Threads,
    ) -> Result<bool, Error> {
        let params = self.read().params();
        let Some(staged) = stage(py, keys, params, threads)? else {
            return Ok(false);
        };
        py.detach(|| {
            let mut g = self.write();
            if !same_shape(&g.params(), &params) {
                return Ok(false);
            }
            self.check_or_learn(&mut g, staged.key_type)?;
            let filter = g.owned_mut()?;
            threads.install(|| merge(filter.words_mut(), &staged.copies));
            filter.add_key_count(staged.keys);
            ONE_PASS.fetch_add(1, Ordering::Relaxed);
            Ok(true)
        })
    }
}

/// The keys of `keys` inserted into copies of a filter of `params`, on `threads`; `None` where
/// [`PyFilter::insert_list`] leaves them to the general path.
fn stage(
    py: Python<'_>,
    keys: &Bound<'_, PyAny>,
    params: Params,
    threads: &Threads,
) -> Result<Option<Staged>, Error> {
    let Some(seq) = TextSeq::of_object(py, keys, params.key_type)? else {
        return Ok(None);
    };
    let (walk, seed) = (seq.walk, params.seed);
    let bytes = params.byte_len();
    let used = threads.count().clamp(1, walk.n.div_ceil(KEYS_PER_THREAD));
    if bytes > COPY_MAX_L2S * CacheSizes::detected().l2 as u64
        || (used as u64).saturating_mul(bytes) > walk.n as u64 * 8
    {
        return Ok(None);
    }
    let probe = Probe::active();
    let pieces = (0..walk.n).step_by(PIECE);
    let mut workers = on_threads(used, pieces, Worker::new, |w, start| {
        if w.failed {
            return;
        }
        if w.copy.is_none() {
            w.copy = Filter::try_new(params);
            w.failed = w.copy.is_none();
            w.hashes = vec![0; PIECE];
        }
        let (Some(copy), len) = (&mut w.copy, PIECE.min(walk.n - start)) else {
            return;
        };
        let out = &mut w.hashes[..len];
        // SAFETY: this thread holds the GIL and runs no Python code until `on_threads` returns
        // (the walk's contract); `start + len <= n`.
        let left = unsafe { walk.hash_run(start, seed, out) };
        let kept = without(out, start, &left);
        probe.insert(copy.as_view_mut(), Keys::Hashes(&out[..kept]));
        w.left.extend(left);
    });
    if workers.iter().any(|w| w.failed) {
        return Ok(None);
    }
    let left: Vec<usize> = workers.iter_mut().flat_map(|w| w.left.drain(..)).collect();
    let mut hashes = Vec::with_capacity(left.len());
    seq.hash_others(py, left, seed, |_, h| hashes.push(h))?;
    let mut copies: Vec<Filter> = workers.into_iter().filter_map(|w| w.copy).collect();
    if let Some(first) = copies.first_mut() {
        probe.insert(first.as_view_mut(), Keys::Hashes(&hashes));
    }
    Ok(Some(Staged {
        key_type: text_key_type(params.key_type),
        keys: walk.n as u64,
        copies,
    }))
}

/// Moves the hashes of `out` (of the items from `start` on) that are not at the indices `left`
/// (ascending) to its front, in order; returns how many there are.
fn without(out: &mut [u64], start: usize, left: &[usize]) -> usize {
    if left.is_empty() {
        return out.len();
    }
    let mut skip = left.iter().map(|&i| i - start).peekable();
    let mut kept = 0;
    for j in 0..out.len() {
        if skip.next_if_eq(&j).is_none() {
            out[kept] = out[j];
            kept += 1;
        }
    }
    kept
}

/// ORs every copy's words into `words`, slices of it in parallel on the current pool.
fn merge(words: &mut [u32], copies: &[Filter]) {
    let slice = words
        .len()
        .div_ceil(rayon::current_num_threads() * MERGE_SLICES_PER_THREAD)
        .next_multiple_of(16);
    words.par_chunks_mut(slice).enumerate().for_each(|(s, w)| {
        let at = s * slice;
        for copy in copies {
            let from = &copy.words()[at..at + w.len()];
            w.iter_mut().zip(from).for_each(|(a, &b)| *a |= b);
        }
    });
}
