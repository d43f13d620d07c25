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
use core::str::FromStr;
use core::sync::atomic::AtomicU32;
use std::sync::OnceLock;

use bloomlanes_core::{block_index, FilterMut, FilterRef, Keys, Params};
use rayon::prelude::*;

pub use partition::{
    release_partition_scratch, CacheSizes, PartitionAuto, PartitionMode, Partitioning,
};

mod arch;
mod bulk;
mod cache;
#[cfg(test)]
mod kernel_tests;
mod partition;
mod portable;
mod scalar;
mod shape;
mod vector;

// The filter kinds of issue #14 (counting, stable, window, scalable): their kernels, entry
// points and `Probe` methods.
mod counter_lanes;
mod counting;
mod counting_kernel;
mod kind_entry;
mod scalable;
// Retrieval tables: batched, prefetched lookups and the parallel build.
mod retrieval;
pub use retrieval::ParallelPasses;
mod window;
mod window_kernel;

/// An implementation of the bulk operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SimdPath {
    /// The core's scalar reference, one key at a time (no batching, no prefetch).
    Scalar,
    /// Vector code on the `wide` crate for the compile-time target ISA (NEON, simd128, SSE2).
    Portable,
    /// x86_64 SSE2 (every x86_64 CPU).
    Sse2,
    /// x86_64 AVX2.
    Avx2,
    /// x86_64 AVX-512F + AVX-512DQ.
    Avx512,
}

impl SimdPath {
    /// Every path, slowest first.
    pub const ALL: [SimdPath; 5] = [
        SimdPath::Scalar,
        SimdPath::Portable,
        SimdPath::Sse2,
        SimdPath::Avx2,
        SimdPath::Avx512,
    ];

    /// Whether this CPU (and this build's target) can run the path.
    pub fn is_available(self) -> bool {
        match self {
            SimdPath::Scalar | SimdPath::Portable => true,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Sse2 => true,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => arch::x86_64::has_avx2(),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => arch::x86_64::has_avx512(),
            #[cfg(not(target_arch = "x86_64"))]
            SimdPath::Sse2 | SimdPath::Avx2 | SimdPath::Avx512 => false,
        }
    }

    /// The name used by `BLOOMLANES_SIMD` and [`FromStr`]: `"scalar"`, `"portable"`, `"sse2"`,
    /// `"avx2"` or `"avx512"`.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Scalar => "scalar",
            SimdPath::Portable => "portable",
            SimdPath::Sse2 => "sse2",
            SimdPath::Avx2 => "avx2",
            SimdPath::Avx512 => "avx512",
        }
    }

    /// The dispatch table, if the path can run here.
    fn fns(self) -> Option<&'static Fns> {
        if !self.is_available() {
            return None;
        }
        match self {
            SimdPath::Scalar => Some(&scalar::FNS),
            SimdPath::Portable => Some(&portable::FNS),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Sse2 => Some(&arch::x86_64::sse2::FNS),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => Some(&arch::x86_64::avx2::FNS),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => Some(&arch::x86_64::avx512::FNS),
            #[cfg(not(target_arch = "x86_64"))]
            _ => None,
        }
    }
}

impl fmt::Display for SimdPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A path name that [`SimdPath::from_str`] does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPath(pub String);

impl fmt::Display for UnknownPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown SIMD path {:?} (expected scalar, portable, sse2, avx2 or avx512)",
            self.0
        )
    }
}

impl std::error::Error for UnknownPath {}

impl FromStr for SimdPath {
    type Err = UnknownPath;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SimdPath::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPath(s.to_string()))
    }
}

/// Every path this CPU can run, slowest first.
pub fn available_paths() -> Vec<SimdPath> {
    SimdPath::ALL
        .into_iter()
        .filter(|p| p.is_available())
        .collect()
}

/// The fastest path this CPU can run.
fn best_path() -> SimdPath {
    *available_paths()
        .last()
        .expect("the scalar path is always available")
}

/// The path used by [`Probe::active`], resolved once per process: `BLOOMLANES_SIMD` if it is set
/// to an available path, else the fastest available one. A bad or unavailable value is reported
/// on stderr once and ignored (never a panic).
pub fn active_path() -> SimdPath {
    static ACTIVE: OnceLock<SimdPath> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        let best = best_path();
        match std::env::var("BLOOMLANES_SIMD") {
            Err(_) => best,
            Ok(v) if v.trim().is_empty() => best,
            Ok(v) => match v.parse::<SimdPath>() {
                Ok(p) if p.is_available() => p,
                Ok(p) => {
                    eprintln!(
                        "bloomlanes-simd: BLOOMLANES_SIMD={p} is not available on this CPU; using {best}"
                    );
                    best
                }
                Err(e) => {
                    eprintln!("bloomlanes-simd: BLOOMLANES_SIMD: {e}; using {best}");
                    best
                }
            },
        }
    })
}

/// One path's entry points (the dispatch table).
///
/// Each is `unsafe` because the x86 ones are `#[target_feature]` functions, which may only run on
/// a CPU that has the features (a table reached through [`SimdPath::fns`] guarantees it), and
/// because the vector ones index the filter's words without bounds checks: the words passed
/// beside a [`Params`] must hold exactly `params.blocks` blocks of `params.layout` (the
/// [`FilterRef`]/[`FilterMut`] invariant, which every caller here passes on).
pub(crate) struct Fns {
    pub(crate) contains_bytes: unsafe fn(Params, &[u32], Keys<'_>, &mut [u8]),
    pub(crate) contains_bitmap: unsafe fn(Params, &[u32], Keys<'_>, &mut [u64]),
    pub(crate) insert: unsafe fn(Params, &mut [u32], Keys<'_>),
    pub(crate) insert_atomic: unsafe fn(Params, &[AtomicU32], Keys<'_>),
    pub(crate) hash: unsafe fn(Keys<'_>, u64, &mut [u64]),
    pub(crate) insert_hashes: unsafe fn(Params, u32, &mut [u32], &[u64]),
}

/// Keys per task of the parallel operations (a multiple of 64, so bitmap words never straddle).
pub(crate) const PAR_CHUNK: usize = 16 * 1024;

/// Views exclusively borrowed words as atomics, for concurrent OR from many threads.
fn as_atomic(words: &mut [u32]) -> &[AtomicU32] {
    // `AtomicU32` is documented to have "the same size and bit validity as the underlying
    // integer type, `u32`", but its alignment "is always equal to its size, even on targets where
    // `u32` has a lesser alignment" (std::sync::atomic::AtomicU32). So equal alignment is not a
    // guarantee of the language (std's own `AtomicU32::from_mut_slice` exists only on targets
    // where it holds): it is checked here, at compile time, for the target at hand.
    const {
        assert!(core::mem::size_of::<AtomicU32>() == core::mem::size_of::<u32>());
        assert!(core::mem::align_of::<AtomicU32>() == core::mem::align_of::<u32>());
    };
    let len = words.len();
    let ptr = words.as_mut_ptr().cast::<AtomicU32>();
    // SAFETY: `ptr` comes from a live `&mut [u32]` of `len` elements, so it is non-null and
    // points to `len` initialised `u32`s; `AtomicU32` has the size and bit validity of `u32`
    // (std docs) and, asserted above, its alignment too, so the same memory is `len` valid,
    // aligned `AtomicU32`s. The returned borrow inherits the exclusive borrow of `words` (same
    // lifetime), so no one reads or writes the words non-atomically while it lives; all access
    // through it is atomic.
    unsafe { core::slice::from_raw_parts(ptr, len) }
}

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
        assert_eq!(out.len(), keys.len(), "one output byte per key");
        if self.partitioned_bytes(filter, keys, out, false) {
            return;
        }
        // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a Probe);
        // `filter.words()` holds exactly `filter.params().blocks` blocks (FilterRef invariant).
        unsafe { (self.fns.contains_bytes)(*filter.params(), filter.words(), keys, out) }
    }

    /// Looks up every key into a bitmap: bit `i % 64` of `out[i / 64]` is set if key `i` may be
    /// present. Bits past the last key are cleared.
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn contains_bitmap(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u64]) {
        assert_eq!(
            out.len(),
            keys.len().div_ceil(64),
            "one output word per 64 keys"
        );
        if self.partitioned_bitmap(filter, keys, out, false) {
            return;
        }
        // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a Probe);
        // `filter.words()` holds exactly `filter.params().blocks` blocks (FilterRef invariant).
        unsafe { (self.fns.contains_bitmap)(*filter.params(), filter.words(), keys, out) }
    }

    /// Inserts every key (partitioned by filter region, like [`Probe::contains`], when the
    /// probe's [`Partitioning`] says it pays; same words).
    pub fn insert(&self, filter: FilterMut<'_, u32>, keys: Keys<'_>) {
        let Some(mut filter) = self.partitioned_insert(filter, keys) else {
            return;
        };
        let params = *filter.params();
        // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a Probe);
        // the words hold exactly `params.blocks` blocks (FilterMut invariant) and are
        // exclusively borrowed through `filter` for the call.
        unsafe { (self.fns.insert)(params, filter.words_mut(), keys) }
    }

    /// [`Probe::contains`] on every core (rayon's current pool), in chunks of 16 Ki keys, or
    /// partitioned with a task per partition (see [`Partitioning`]).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn par_contains(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u8]) {
        assert_eq!(out.len(), keys.len(), "one output byte per key");
        if self.partitioned_bytes(filter, keys, out, true) {
            return;
        }
        out.par_chunks_mut(PAR_CHUNK)
            .enumerate()
            .for_each(|(c, out)| {
                let start = c * PAR_CHUNK;
                self.contains(filter, keys.slice(start..start + out.len()), out);
            });
    }

    /// [`Probe::contains_bitmap`] on every core (rayon's current pool), in chunks of 16 Ki
    /// keys, or partitioned with a task per partition (see [`Partitioning`]).
    ///
    /// # Panics
    /// If `out.len() != keys.len().div_ceil(64)`.
    pub fn par_contains_bitmap(&self, filter: FilterRef<'_, u32>, keys: Keys<'_>, out: &mut [u64]) {
        assert_eq!(
            out.len(),
            keys.len().div_ceil(64),
            "one output word per 64 keys"
        );
        if self.partitioned_bitmap(filter, keys, out, true) {
            return;
        }
        out.par_chunks_mut(PAR_CHUNK / 64)
            .enumerate()
            .for_each(|(c, out)| {
                let start = c * PAR_CHUNK;
                let end = (start + PAR_CHUNK).min(keys.len());
                self.contains_bitmap(filter, keys.slice(start..end), out);
            });
    }

    /// [`Probe::insert`] on every core (rayon's current pool), leaving exactly the words of a
    /// sequential insert of the same keys.
    ///
    /// No atomics: the filter is exclusively borrowed. In [`PartitionMode::Auto`] (the default)
    /// one-thread pools and batches under [`PAR_INSERT_MIN_KEYS`] keys take [`Probe::insert`];
    /// filters that fit in L2 get a private copy per thread when the batch pays for the copies
    /// ([`Probe::par_insert_copies`]); everything else is partitioned by filter region, a few
    /// partitions per thread, each written by one task only. [`PartitionMode::Partitioned`]
    /// always partitions. [`PartitionMode::Direct`] keeps the block-range scheme: the blocks
    /// are split into disjoint ranges (a few per thread) and each range's task inserts, with the
    /// plain vector kernel, the hashes that fall into it (see [`Probe::par_insert_ranges`]; one
    /// range per thread up to 4 threads, 4 per thread beyond), with filters of at most
    /// [`PAR_INSERT_MIN_BYTES`], short batches and one-thread pools on one thread.
    pub fn par_insert(&self, filter: FilterMut<'_, u32>, keys: Keys<'_>) {
        let Some(filter) = partition::par_insert(self, filter, keys) else {
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
    }

    /// [`Probe::par_insert`] with exactly `ranges` block ranges (at least 1) and no single-thread
    /// fallback, for tests and tuning.
    ///
    /// The keys are taken in chunks of [`PAR_INSERT_CHUNK`] and each chunk is hashed in parallel
    /// tasks. Each range owns `ceil(blocks / ranges)` consecutive blocks (trailing ranges may be
    /// empty) and its task inserts, with the plain (non-atomic) vector kernel, the chunk's
    /// hashes that fall into them: with up to 4 ranges it scans all the chunk's hashes, with more
    /// the hashing tasks first sort their hashes into one bucket per range. The words end up
    /// exactly as after [`Probe::insert`] (OR does not depend on the order).
    pub fn par_insert_ranges(&self, mut filter: FilterMut<'_, u32>, keys: Keys<'_>, ranges: usize) {
        let n = keys.len();
        if n == 0 {
            return;
        }
        let params = *filter.params();
        let (layout, blocks, seed) = (params.layout, params.blocks, params.seed);
        let per = layout.block_u32s();
        let ranges = ranges.clamp(1, (blocks as usize).max(1) * 64);
        let bpr = (blocks as usize).div_ceil(ranges).max(1);
        // The ranges' words, disjoint, in block order.
        let mut parts: Vec<(u32, &mut [u32])> = Vec::with_capacity(ranges);
        let mut rest = filter.words_mut();
        for r in 0..ranges {
            let take = (bpr * per).min(rest.len());
            let (a, b) = rest.split_at_mut(take);
            parts.push(((r * bpr).min(blocks as usize) as u32, a));
            rest = b;
        }
        if ranges <= SCAN_MAX_RANGES {
            // Few ranges: hash the chunk into one buffer and let every range's task scan it all
            // (a streaming read from the caches is cheaper than sorting the hashes by range).
            let mut buf = vec![0u64; n.min(PAR_INSERT_CHUNK)];
            let mut start = 0;
            while start < n {
                let chunk = keys.slice(start..(start + PAR_INSERT_CHUNK).min(n));
                let len = chunk.len();
                let buf = &mut buf[..len];
                buf.par_chunks_mut(PAR_HASH_TASK)
                    .enumerate()
                    .for_each(|(t, out)| {
                        let lo = t * PAR_HASH_TASK;
                        // SAFETY: `self.fns` belongs to an available path (only `Probe::new`
                        // builds a Probe); hashing reads only the keys.
                        unsafe { (self.fns.hash)(chunk.slice(lo..lo + out.len()), seed, out) };
                    });
                let buf = &*buf;
                parts.par_iter_mut().for_each(|(first, words)| {
                    // SAFETY: `self.fns` belongs to an available path (only `Probe::new` builds a
                    // Probe); `words` is a whole number of blocks `first ..` of this filter, cut
                    // from its exclusively borrowed words, and the kernel checks each hash's block
                    // against that range before touching it.
                    unsafe { (self.fns.insert_hashes)(params, *first, words, buf) };
                });
                start += len;
            }
            return;
        }
        // Many ranges: each hashing task sorts its hashes into one bucket per range, so that each
        // range's task reads only its own hashes. The range of block `b` is `b / bpr`, computed
        // as `(b × (⌊(2^64 − 1) / bpr⌋ + 1)) >> 64` (exact for `b, bpr < 2^32`, `bpr > 1`).
        let recip = (u64::MAX / bpr as u64).wrapping_add(1); // unused when bpr == 1
        let range_of = move |b: u32| -> usize {
            if bpr == 1 {
                b as usize
            } else {
                ((u128::from(b) * u128::from(recip)) >> 64) as usize
            }
        };
        let tasks = n.min(PAR_INSERT_CHUNK).div_ceil(PAR_HASH_TASK);
        let mut buckets: Vec<Vec<Vec<u64>>> =
            (0..tasks).map(|_| vec![Vec::new(); ranges]).collect();
        let mut start = 0;
        while start < n {
            let chunk = keys.slice(start..(start + PAR_INSERT_CHUNK).min(n));
            let len = chunk.len();
            buckets.par_iter_mut().enumerate().for_each(|(t, bk)| {
                bk.iter_mut().for_each(Vec::clear);
                let lo = (t * PAR_HASH_TASK).min(len);
                let hi = ((t + 1) * PAR_HASH_TASK).min(len);
                let mut buf = [0u64; 256];
                let mut i = lo;
                while i < hi {
                    let m = (hi - i).min(buf.len());
                    // SAFETY: `self.fns` belongs to an available path (only `Probe::new`
                    // builds a Probe); hashing reads only the keys.
                    unsafe { (self.fns.hash)(chunk.slice(i..i + m), seed, &mut buf[..m]) };
                    for &h in &buf[..m] {
                        bk[range_of(block_index(h, blocks))].push(h);
                    }
                    i += m;
                }
            });
            let buckets = &buckets;
            parts
                .par_iter_mut()
                .enumerate()
                .for_each(|(r, (first, words))| {
                    for bk in buckets {
                        // SAFETY: `self.fns` belongs to an available path (only `Probe::new`
                        // builds a Probe); `words` holds whole blocks `first ..` of this filter,
                        // cut from its exclusively borrowed words, and the kernel checks each
                        // hash's block against that range before touching it.
                        unsafe { (self.fns.insert_hashes)(params, *first, words, &bk[r]) };
                    }
                });
            start += len;
        }
    }
}

/// Filters up to this many bytes are filled by [`Probe::par_insert`] on one thread: they sit in
/// the L2 cache, where one core inserts about as fast as the partitioned parallel insert
/// (measured on the 2-core AVX2 machine; see `BENCHMARKS.md`, `insert/1M` and `insert/16M`).
pub const PAR_INSERT_MIN_BYTES: usize = 1 << 20;

/// Batches shorter than this are inserted by [`Probe::par_insert`] on one thread (the parallel
/// set-up would dominate).
pub const PAR_INSERT_MIN_KEYS: usize = 1 << 15;

/// Keys per chunk of [`Probe::par_insert_ranges`]: their hashes (8 bytes each) stay in the caches
/// between the hashing and the inserting pass.
pub const PAR_INSERT_CHUNK: usize = 1 << 16;

/// Keys hashed per task of [`Probe::par_insert_ranges`].
const PAR_HASH_TASK: usize = 16 * 1024;

/// Block ranges per thread in [`Probe::par_insert`] when the hashes are sorted by range (more
/// than one evens out the load when a core is busy elsewhere).
const RANGES_PER_THREAD: usize = 4;

/// Up to this many ranges, every range's task scans the whole hash buffer of a chunk; above,
/// the hashes are sorted into per-range buckets first. Measured on 2 cores: with 2 ranges the
/// scan was ≈ 1.7× faster than sorting at 1 MiB, with 16 threads and ranges sorting was 2–4×
/// faster (the scan reads every hash once per range).
const SCAN_MAX_RANGES: usize = 4;

/// A filter that many threads insert into at once (it is `Sync`): every word is updated with an
/// atomic OR, skipped when the bits are already set, so no bit is lost to a concurrent writer.
///
/// For one batch, [`Probe::par_insert`] (which partitions the blocks instead) is much faster;
/// this is for inserts that arrive from independent threads.
///
/// ```
/// use bloomlanes_core::{Filter, Keys, Layout, Params};
/// use bloomlanes_simd::{Probe, SharedFilter};
///
/// let mut filter = Filter::new(Params::new(Layout::L8x32, 64));
/// let mut view = filter.as_view_mut();
/// let shared = SharedFilter::new(Probe::active(), &mut view);
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let shared = &shared;
///         s.spawn(move || {
///             let keys: Vec<u64> = (t * 100..t * 100 + 100).collect();
///             shared.insert(Keys::U64(&keys));
///         });
///     }
/// });
/// assert!((0..400u64).all(|k| filter.contains(&k)));
/// ```
pub struct SharedFilter<'a> {
    probe: Probe,
    params: Params,
    words: &'a [AtomicU32],
}

impl fmt::Debug for SharedFilter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFilter")
            .field("path", &self.probe.path)
            .field("params", &self.params)
            .finish()
    }
}

impl<'a> SharedFilter<'a> {
    /// Shares the words of `filter` (exclusively borrowed for `'a`) for concurrent inserts with
    /// `probe`'s kernels.
    pub fn new(probe: Probe, filter: &'a mut FilterMut<'_, u32>) -> SharedFilter<'a> {
        let params = *filter.params();
        SharedFilter {
            probe,
            params,
            words: as_atomic(filter.words_mut()),
        }
    }

    /// The filter's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Inserts every key, concurrently with any other thread's `insert` on the same filter.
    pub fn insert(&self, keys: Keys<'_>) {
        // SAFETY: `self.probe.fns` belongs to an available path (only `Probe::new` builds a
        // Probe); `words` is the whole filter (`params.blocks` whole blocks, taken from a
        // FilterMut), accessed only atomically while shared.
        unsafe { (self.probe.fns.insert_atomic)(self.params, self.words, keys) }
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
