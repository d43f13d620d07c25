//! `bloomlanes-simd`: the CPU backend of bloomlanes.
//!
//! All `k` probes of a key are one vector operation: the lane bit indices come from one vector
//! multiply of `lo32(hash)` by [`SALTS`](bloomlanes_core::SALTS), the block mask from one
//! variable shift, and the test (or insert) from one AND-compare (or OR) against the block. Bulk
//! operations hash a group of keys (integer keys with XXH64 in vector lanes), prefetch their
//! blocks, and probe them while the next group's blocks are being fetched, so filters far larger
//! than the caches run at memory-level parallelism. [`Probe::par_contains`] and
//! [`Probe::par_insert`] use every core (rayon), the latter by giving each thread its own block
//! range (no atomics); [`SharedFilter`] takes inserts from many threads at once with atomic OR.
//!
//! Results are bit-identical to the core's scalar reference for every path, layout and key form.
//!
//! # Filter kinds
//! Counting and stable filters ([`Probe::insert_counting`], [`Probe::remove_counting`] and their
//! parallel forms; lookups are [`Probe::contains`] of the projection), sliding windows
//! ([`Probe::insert_window`], [`Probe::insert_window_at`], [`Probe::contains_window`]) and
//! scalable filters ([`Probe::insert_scalable`], [`Probe::contains_scalable`]) have bulk
//! operations on every path too, each leaving exactly the words of the core's key-by-key
//! operations in input order.
//!
//! # Paths and dispatch
//! [`SimdPath`] names the implementations: `scalar` (the core reference, key by key),
//! `portable` (the `wide` crate, compiled for the target's own vector ISA), and on x86_64 `sse2`,
//! `avx2` and `avx512` (AVX-512F + DQ, and BW + VL for the counting kernels), chosen at run
//! time. [`active_path`] picks the best one the CPU supports once per process; the environment
//! variable `BLOOMLANES_SIMD` (`scalar|portable|sse2|avx2|avx512`) overrides it, and
//! [`Probe::new`] picks one explicitly.
//!
//! ```
//! use bloomlanes_core::{Filter, Keys, Layout, Params};
//! use bloomlanes_simd::Probe;
//!
//! let mut filter = Filter::new(Params::new(Layout::L8x32, 64));
//! let probe = Probe::active();
//! let keys: Vec<u64> = (0..1000).collect();
//! probe.insert(filter.as_view_mut(), Keys::U64(&keys));
//! let mut found = vec![0u8; keys.len()];
//! probe.contains(filter.as_view(), Keys::U64(&keys), &mut found);
//! assert!(found.iter().all(|&b| b == 1));
//! ```
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

use core::fmt;

use bloomlanes_core::{FilterMut, FilterRef, Keys};

pub use cells::{CellFilter, CellValue, Classes, Schedule};
pub use dispatch::{active_path, available_paths, SimdPath, UnknownPath};
pub use hash_bytes::{xxh64_spans, LANE_KEY_MAX};
pub use partition::{
    release_partition_scratch, set_partition_measurement, CacheSizes, PartitionAuto, PartitionMode,
    Partitioning,
};
pub use ranges::{PAR_INSERT_CHUNK, PAR_INSERT_MIN_BYTES, PAR_INSERT_MIN_KEYS};
pub use shared::SharedFilter;

use dispatch::Fns;
use partition::Out;
use ranges::{RANGES_PER_THREAD, SCAN_MAX_RANGES};

mod arch;
mod bulk;
mod cache;
mod dispatch;
mod hash_bytes;
mod huge_pages;
#[cfg(test)]
mod kernel_tests;
mod partition;
mod portable;
mod prefetch;
mod ranges;
mod scalar;
mod shape;
mod shared;
mod vector;

// The filter kinds of issue #14 (counting, stable, window, scalable): their kernels, entry
// points and `Probe` methods.
mod cell_kernel;
mod cell_lanes;
mod cell_read;
mod cells;
mod chunks;
mod counting;
mod kind_entry;
mod scalable;
// Retrieval tables: batched, prefetched lookups and the parallel build.
mod retrieval;
pub use retrieval::ParallelPasses;
mod spatial;
mod window;
mod window_kernel;

/// Keys per task of the parallel operations (a multiple of 64, so bitmap words never straddle).
pub(crate) const PAR_CHUNK: usize = 16 * 1024;

/// The bulk operations of one [`SimdPath`].
///
/// Every operation gives the same answers, and leaves the same filter words, as the core's
/// scalar reference ([`FilterRef::contains_hash`], [`FilterMut::insert_hash`]) with the key
/// hashes of [`Keys::hash`].
#[derive(Clone, Copy)]
pub struct Probe {
    path: SimdPath,
    fns: &'static Fns,
    /// When bulk operations partition the batch (`partition`).
    partitioning: Partitioning,
}

impl fmt::Debug for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Probe")
            .field("path", &self.path)
            .field("partitioning", &self.partitioning.mode)
            .finish()
    }
}

impl Probe {
    /// The operations of `path`, or `None` if this CPU (or target) lacks it.
    pub fn new(path: SimdPath) -> Option<Probe> {
        path.fns().map(|fns| Probe {
            path,
            fns,
            partitioning: Partitioning::default(),
        })
    }

    /// The operations of [`active_path`].
    pub fn active() -> Probe {
        Probe::new(active_path()).expect("active_path is always available")
    }

    /// The path in use.
    pub fn path(&self) -> SimdPath {
        self.path
    }

    /// Looks up every key: `out[i]` is 1 if key `i` may be present, else 0. Large batches for
    /// filters beyond the caches are partitioned by filter region when the probe's
    /// [`Partitioning`] says it pays (same answers).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn contains(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u8]) {
        chunks::check_per_key(out.len(), &keys);
        let Some(direct) = self.partitioned_contains(filter, keys, Out::Bytes(out), false) else {
            return;
        };
        // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a Probe);
        // `filter.words()` holds exactly `filter.params().blocks` blocks (FilterRef invariant).
        unsafe { (self.fns.contains_bytes)(*filter.params(), filter.words(), keys, out) }
        direct.done();
    }

    /// Looks up every key into a bitmap: bit `i % 64` of `out[i / 64]` is set if key `i` may be
    /// present. Bits past the last key are cleared.
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn contains_bitmap(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u64]) {
        chunks::check_bitmap(out, &keys);
        let Some(direct) = self.partitioned_contains(filter, keys, Out::Bits(out), false) else {
            return;
        };
        // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a Probe);
        // `filter.words()` holds exactly `filter.params().blocks` blocks (FilterRef invariant).
        unsafe { (self.fns.contains_bitmap)(*filter.params(), filter.words(), keys, out) }
        direct.done();
    }

    /// Inserts every key (partitioned by filter region, like [`Probe::contains`], when the
    /// probe's [`Partitioning`] says it pays; same words).
    pub fn insert(&self, mut filter: FilterMut<'_, u32>, keys: Keys<'_>) {
        huge_pages::advise(filter.words_mut());
        let Some((mut filter, direct)) = self.partitioned_insert(filter, keys) else {
            return;
        };
        let params = *filter.params();
        // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a Probe);
        // the words hold exactly `params.blocks` blocks (FilterMut invariant) and are
        // exclusively borrowed through `filter` for the call.
        unsafe { (self.fns.insert)(params, filter.words_mut(), keys) }
        direct.done();
    }

    /// [`Probe::contains`] on every core (rayon's current pool), in chunks of 16 Ki keys, or
    /// partitioned with a task per partition (see [`Partitioning`]).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn par_contains(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u8]) {
        chunks::check_per_key(out.len(), &keys);
        if let Some(direct) = self.partitioned_contains(filter, keys, Out::Bytes(out), true) {
            chunks::par_chunks(keys, out, 1, |k, o| self.contains(filter, k, o));
            direct.done();
        }
    }

    /// [`Probe::contains_bitmap`] on every core (rayon's current pool), in chunks of 16 Ki
    /// keys, or partitioned with a task per partition (see [`Partitioning`]).
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn par_contains_bitmap(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u64]) {
        chunks::check_bitmap(out, &keys);
        if let Some(direct) = self.partitioned_contains(filter, keys, Out::Bits(out), true) {
            chunks::par_chunks(keys, out, 64, |k, o| self.contains_bitmap(filter, k, o));
            direct.done();
        }
    }

    /// [`Probe::insert`] on every core (rayon's current pool), leaving exactly the words of a
    /// sequential insert of the same keys.
    ///
    /// No atomics: the filter is exclusively borrowed. In [`PartitionMode::Auto`] (the default)
    /// one-thread pools and batches under [`PAR_INSERT_MIN_KEYS`] keys take [`Probe::insert`];
    /// filters that fit in L2 get a private copy per thread when the batch pays for the copies
    /// ([`Probe::par_insert_copies`]); everything else is partitioned by filter region, a few
    /// partitions per thread, each written by one task only, or split into block ranges as in
    /// the direct mode where this process has timed those faster for calls of the size (see
    /// [`set_partition_measurement`]). [`PartitionMode::Partitioned`]
    /// always partitions. [`PartitionMode::Direct`] keeps the block-range scheme: the blocks
    /// are split into disjoint ranges (a few per thread) and each range's task inserts, with the
    /// plain vector kernel, the hashes that fall into it (see [`Probe::par_insert_ranges`]; one
    /// range per thread up to 4 threads, 4 per thread beyond), with filters of at most
    /// [`PAR_INSERT_MIN_BYTES`], short batches and one-thread pools on one thread.
    pub fn par_insert(&self, mut filter: FilterMut<'_, u32>, keys: Keys<'_>) {
        huge_pages::advise(filter.words_mut());
        let Some((filter, timed)) = partition::par_insert(self, filter, keys) else {
            return;
        };
        let threads = rayon::current_num_threads();
        let bytes = filter.params().byte_len();
        if threads <= 1 || bytes <= PAR_INSERT_MIN_BYTES as u64 || keys.len() < PAR_INSERT_MIN_KEYS
        {
            self.insert(filter, keys);
        } else if threads <= SCAN_MAX_RANGES {
            self.par_insert_ranges(filter, keys, threads);
        } else {
            self.par_insert_ranges(filter, keys, threads * RANGES_PER_THREAD);
        }
        timed.done();
    }

    /// Hashes every key with `seed` as this probe's bulk operations do (integer keys in
    /// vector lanes): `out[i]` is key `i`'s hash, the core's [`Keys::hash`]. For callers that
    /// need the hashes themselves, e.g. to find repeated keys.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn hash_keys(&self, keys: Keys<'_>, seed: u64, out: &mut [u64]) {
        assert_eq!(out.len(), keys.len(), "one hash per key");
        kind_entry::hash_into(self, keys, seed, out)
    }
}

/// Hooks for the benchmarks; not a stable API.
#[doc(hidden)]
pub mod bench_support {
    /// XXH64 of `u64` keys, 4 at a time in AVX2 lanes; `false` (nothing done) without AVX2.
    pub fn hash_u64_avx2(keys: &[u64], seed: u64, out: &mut [u64]) -> bool {
        #[cfg(target_arch = "x86_64")]
        if crate::arch::x86_64::has_avx2() {
            // SAFETY: `hash_u64_vector` needs only AVX2, which `has_avx2` just detected.
            unsafe { crate::arch::x86_64::avx2::hash_u64_vector(keys, seed, out) };
            return true;
        }
        let _ = (keys, seed, out);
        false
    }
}
