//! [`Probe::par_insert_ranges`]: the all-core insert of the direct mode, each block range of
//! the filter written by one task.

use bloomlanes_core::{block_index, FilterMut, Keys};
use rayon::prelude::*;

use crate::Probe;

impl Probe {
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
pub(crate) const RANGES_PER_THREAD: usize = 4;

/// Up to this many ranges, every range's task scans the whole hash buffer of a chunk; above,
/// the hashes are sorted into per-range buckets first. Measured on 2 cores: with 2 ranges the
/// scan was ≈ 1.7× faster than sorting at 1 MiB, with 16 threads and ranges sorting was 2–4×
/// faster (the scan reads every hash once per range).
pub(crate) const SCAN_MAX_RANGES: usize = 4;
