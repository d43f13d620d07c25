//! Bulk operations of the counting and stable filters (`bloomlanes_core::counting`).
//!
//! Every operation leaves exactly the image and counters of the core's key-by-key path in input
//! order ([`CountingMut::insert_hash`], [`CountingMut::remove_hash`],
//! [`CountingMut::stable_insert_hash`]): keys of one batch that share counters see each other's
//! updates, a delete that finds a counter at zero is refused and changes nothing. Lookups are
//! static lookups of the projection: [`Probe::contains`] of [`CountingMut::projection`] or
//! [`CountingFilter::projection`].
//!
//! ```
//! use bloomlanes_core::{CounterBits, CountingFilter, Keys, Layout, Params};
//! use bloomlanes_simd::Probe;
//!
//! let probe = Probe::active();
//! let mut f = CountingFilter::counting(Params::new(Layout::L8x32, 64), CounterBits::Four);
//! let keys: Vec<u64> = (0..1000).collect();
//! probe.insert_counting_filter(&mut f, Keys::U64(&keys));
//! let mut refused = vec![0u64; 500usize.div_ceil(64)];
//! let n = probe.remove_counting_filter(&mut f, Keys::U64(&keys[..500]), &mut refused).unwrap();
//! assert_eq!(n, 0);
//! let mut found = vec![0u8; 500];
//! probe.contains(f.projection(), Keys::U64(&keys[500..]), &mut found);
//! assert!(found.iter().all(|&b| b == 1));
//! ```

use bloomlanes_core::{CountingFilter, CountingMut, FilterKind, Keys, Params, RemoveError};
use rayon::prelude::*;

use crate::counter_lanes::{DEC, INC};
use crate::kind_entry::{hash_into, kind_fns, KindFns, CHUNK, PAR_CHUNK};
use crate::Probe;

/// Partitions per thread of a partitioned all-core counting update (evens out the load).
const PARTS_PER_THREAD: usize = 4;

/// Sets bit `i` of a bitmap.
fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// The filter's counter words per block.
fn counter_words_per_block(p: &Params) -> usize {
    let bits = p.kind.counter_bits().expect("a counting or stable filter");
    p.layout.block_u32s() * bits.bits() as usize
}

impl Probe {
    /// Inserts every key into a counting or stable filter, in order: a counting insert for a
    /// counting filter, a stable insert (decrement `P` cells, then set the key's counters to
    /// the maximum) for a stable one, exactly as the core's key-by-key
    /// [`CountingMut::insert_hash`] or [`CountingMut::stable_insert_hash`]. The image blocks
    /// and counter blocks (and a stable filter's decremented cells) of upcoming keys are
    /// prefetched. Counting inserts of large batches into filters beyond the caches are
    /// partitioned by filter region when the probe's [`crate::Partitioning`] says so (its
    /// automatic mode: image and counters over half the last-level cache and at most 160 bytes
    /// of them per key of the batch); the words end the same either way.
    pub fn insert_counting(&self, mut filter: CountingMut<'_>, keys: Keys<'_>) {
        let p = *filter.params();
        let Some(kf) = kind_fns(self.path) else {
            for i in 0..keys.len() {
                let h = keys.hash(i, p.seed);
                match p.kind {
                    FilterKind::Stable { decrements, .. } => {
                        filter.stable_insert_hash(h, decrements)
                    }
                    _ => filter.insert_hash(h),
                }
            }
            return;
        };
        if matches!(p.kind, FilterKind::Counting { .. })
            && self.partitioning.partitions_counting(&p, keys.len())
        {
            let plan = self.partitioning.counting_plan(&p, keys.len(), 1, 1);
            crate::partition::counting_update(self, kf, INC, &plan, filter, keys, &mut [], false);
            return;
        }
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        let mut refused = Vec::new();
        let (image, counters) = filter.parts_mut();
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, p.seed, hashes);
            // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernels check
            // the shapes of the image and counters, which a CountingMut holds for `p`.
            unsafe {
                match p.kind {
                    FilterKind::Stable { decrements, .. } => {
                        (kf.stable)(p, decrements, image, counters, hashes)
                    }
                    _ => (kf.counting)(INC, p, 0, image, counters, hashes, &mut refused),
                }
            }
        }
    }

    /// Deletes every key from a counting filter, in order, exactly as the core's key-by-key
    /// [`CountingMut::remove_hash`]: a key whose counters are not all positive (at its turn:
    /// an earlier delete of the same batch may have emptied them) is refused and changes
    /// nothing; the others decrement their non-saturated counters. Partitioned as
    /// [`Probe::insert_counting`] is, with the same result. Bit `i % 64` of
    /// `refused[i / 64]` is set for each refused key and cleared for the others; the result is
    /// the number of refused keys.
    ///
    /// # Errors
    /// [`RemoveError::Unsupported`] (nothing changed) unless the filter is a counting filter.
    ///
    /// # Panics
    /// If `refused.len() != keys.len().div_ceil(64)`.
    pub fn remove_counting(
        &self,
        mut filter: CountingMut<'_>,
        keys: Keys<'_>,
        refused: &mut [u64],
    ) -> Result<u64, RemoveError> {
        assert_eq!(
            refused.len(),
            keys.len().div_ceil(64),
            "one refused bit per key"
        );
        let p = *filter.params();
        if !matches!(p.kind, FilterKind::Counting { .. }) {
            return Err(RemoveError::Unsupported);
        }
        refused.fill(0);
        let mut count = 0;
        let Some(kf) = kind_fns(self.path) else {
            for i in 0..keys.len() {
                if filter.remove_hash(keys.hash(i, p.seed)).is_err() {
                    set_bit(refused, i);
                    count += 1;
                }
            }
            return Ok(count);
        };
        if self.partitioning.partitions_counting(&p, keys.len()) {
            let plan = self.partitioning.counting_plan(&p, keys.len(), 1, 1);
            return Ok(crate::partition::counting_update(
                self, kf, DEC, &plan, filter, keys, refused, false,
            ));
        }
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        let mut no = Vec::new();
        let (image, counters) = filter.parts_mut();
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, p.seed, hashes);
            no.clear();
            // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernel checks
            // the shapes of the image and counters, which a CountingMut holds for `p`.
            unsafe { (kf.counting)(DEC, p, 0, image, counters, hashes, &mut no) };
            for &i in &no {
                set_bit(refused, start + i as usize);
            }
            count += no.len() as u64;
        }
        Ok(count)
    }

    /// [`Probe::insert_counting`] on every core (rayon's current pool) for a counting filter,
    /// leaving exactly the words of the sequential insert: partitioned (a few partitions per
    /// thread) where the sequential insert would be, else the blocks are split into one
    /// range per thread and each range's task applies, in input order, the keys that fall into
    /// it (increments of different blocks are independent). Stable filters (whose inserts
    /// decrement cells anywhere), one-thread pools, the scalar path and batches under
    /// [`crate::PAR_INSERT_MIN_KEYS`] keys take the sequential insert.
    pub fn par_insert_counting(&self, filter: CountingMut<'_>, keys: Keys<'_>) {
        let threads = rayon::current_num_threads();
        let p = *filter.params();
        match kind_fns(self.path) {
            Some(kf)
                if threads > 1
                    && keys.len() >= crate::PAR_INSERT_MIN_KEYS
                    && matches!(p.kind, FilterKind::Counting { .. }) =>
            {
                self.par_update_auto(kf, INC, filter, keys, threads, &mut []);
            }
            _ => self.insert_counting(filter, keys),
        }
    }

    /// [`Probe::remove_counting`] on every core (rayon's current pool), with exactly its
    /// result: one block range per thread, each range's keys deleted in input order (a key's
    /// delete depends only on its own block). One-thread pools, the scalar path and batches
    /// under [`crate::PAR_INSERT_MIN_KEYS`] keys take the sequential delete.
    ///
    /// # Errors
    /// [`RemoveError::Unsupported`] (nothing changed) unless the filter is a counting filter.
    ///
    /// # Panics
    /// If `refused.len() != keys.len().div_ceil(64)`.
    pub fn par_remove_counting(
        &self,
        filter: CountingMut<'_>,
        keys: Keys<'_>,
        refused: &mut [u64],
    ) -> Result<u64, RemoveError> {
        let threads = rayon::current_num_threads();
        match kind_fns(self.path) {
            Some(kf)
                if threads > 1
                    && keys.len() >= crate::PAR_INSERT_MIN_KEYS
                    && matches!(filter.params().kind, FilterKind::Counting { .. }) =>
            {
                assert_eq!(
                    refused.len(),
                    keys.len().div_ceil(64),
                    "one refused bit per key"
                );
                Ok(self.par_update_auto(kf, DEC, filter, keys, threads, refused))
            }
            _ => self.remove_counting(filter, keys, refused),
        }
    }

    /// [`Probe::par_insert_counting`] or [`Probe::par_remove_counting`] with exactly `ranges`
    /// block ranges (at least 1) and no sequential fallback, for tests and tuning. `remove`
    /// selects deletes; `refused` is as for [`Probe::remove_counting`] (ignored for inserts).
    /// The scalar path runs the sequential reference.
    ///
    /// # Errors
    /// [`RemoveError::Unsupported`] for deletes from (and inserts into) a filter that is not
    /// a counting filter: stable inserts are sequential by nature.
    ///
    /// # Panics
    /// For deletes, if `refused.len() != keys.len().div_ceil(64)`.
    pub fn par_counting_ranges(
        &self,
        filter: CountingMut<'_>,
        keys: Keys<'_>,
        remove: bool,
        refused: &mut [u64],
        ranges: usize,
    ) -> Result<u64, RemoveError> {
        if !matches!(filter.params().kind, FilterKind::Counting { .. }) {
            return Err(RemoveError::Unsupported);
        }
        let Some(kf) = kind_fns(self.path) else {
            if remove {
                return self.remove_counting(filter, keys, refused);
            }
            self.insert_counting(filter, keys);
            return Ok(0);
        };
        if remove {
            assert_eq!(
                refused.len(),
                keys.len().div_ceil(64),
                "one refused bit per key"
            );
            Ok(self.par_update(kf, DEC, filter, keys, ranges, refused))
        } else {
            Ok(self.par_update(kf, INC, filter, keys, ranges, &mut []))
        }
    }

    /// A partitioned counting insert or delete (`remove`), always partitioned with this
    /// probe's [`crate::Partitioning`] sizes (whatever its mode), on every core if `parallel`,
    /// for tests and tuning; the result and `refused` are as for [`Probe::remove_counting`]
    /// (`refused` is ignored for inserts). The scalar path runs the sequential reference.
    ///
    /// # Errors
    /// [`RemoveError::Unsupported`] for a filter that is not a counting filter (stable inserts
    /// are not partitioned).
    ///
    /// # Panics
    /// For deletes, if `refused.len() != keys.len().div_ceil(64)`.
    pub fn counting_partitioned(
        &self,
        filter: CountingMut<'_>,
        keys: Keys<'_>,
        remove: bool,
        refused: &mut [u64],
        parallel: bool,
    ) -> Result<u64, RemoveError> {
        let p = *filter.params();
        if !matches!(p.kind, FilterKind::Counting { .. }) {
            return Err(RemoveError::Unsupported);
        }
        let Some(kf) = kind_fns(self.path) else {
            if remove {
                return self.remove_counting(filter, keys, refused);
            }
            self.insert_counting(filter, keys);
            return Ok(0);
        };
        if remove {
            assert_eq!(
                refused.len(),
                keys.len().div_ceil(64),
                "one refused bit per key"
            );
        }
        let threads = if parallel {
            rayon::current_num_threads()
        } else {
            1
        };
        let plan =
            self.partitioning
                .counting_plan(&p, keys.len(), threads, threads * PARTS_PER_THREAD);
        let (op, refused) = if remove {
            (DEC, refused)
        } else {
            (INC, &mut [][..])
        };
        Ok(crate::partition::counting_update(
            self, kf, op, &plan, filter, keys, refused, parallel,
        ))
    }

    /// The parallel counting insert or delete: partitioned (a few partitions per thread) when
    /// the probe's partitioning says so for this batch, else over one block range per thread.
    fn par_update_auto(
        &self,
        kf: &'static KindFns,
        op: u8,
        filter: CountingMut<'_>,
        keys: Keys<'_>,
        threads: usize,
        refused: &mut [u64],
    ) -> u64 {
        let p = *filter.params();
        if self.partitioning.partitions_counting(&p, keys.len()) {
            let plan = self.partitioning.counting_plan(
                &p,
                keys.len(),
                threads,
                threads * PARTS_PER_THREAD,
            );
            crate::partition::counting_update(self, kf, op, &plan, filter, keys, refused, true)
        } else {
            self.par_update(kf, op, filter, keys, threads, refused)
        }
    }

    /// The parallel counting insert or delete over `ranges` block ranges.
    fn par_update(
        &self,
        kf: &'static KindFns,
        op: u8,
        mut filter: CountingMut<'_>,
        keys: Keys<'_>,
        ranges: usize,
        refused: &mut [u64],
    ) -> u64 {
        let p = *filter.params();
        let n = keys.len();
        refused.fill(0);
        if n == 0 {
            return 0;
        }
        let per = p.layout.block_u32s();
        let cper = counter_words_per_block(&p);
        let blocks = p.blocks as usize;
        let ranges = ranges.clamp(1, blocks.max(1));
        let bpr = blocks.div_ceil(ranges);
        let (mut image, mut counters) = filter.parts_mut();
        // The ranges' words, disjoint, in block order, each with its list of refused keys.
        let mut parts = Vec::with_capacity(ranges);
        for r in 0..ranges {
            let take = bpr.min(blocks - (r * bpr).min(blocks));
            let (a, b) = core::mem::take(&mut image).split_at_mut(take * per);
            let (c, d) = core::mem::take(&mut counters).split_at_mut(take * cper);
            parts.push(((r * bpr).min(blocks) as u32, a, c, Vec::<u32>::new()));
            image = b;
            counters = d;
        }
        let mut buf = vec![0u64; n.min(PAR_CHUNK)];
        let mut count = 0;
        for start in (0..n).step_by(PAR_CHUNK) {
            let chunk = keys.slice(start..(start + PAR_CHUNK).min(n));
            let hashes = &mut buf[..chunk.len()];
            hashes
                .par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(t, out)| {
                    let lo = t * CHUNK;
                    hash_into(self, chunk.slice(lo..lo + out.len()), p.seed, out);
                });
            let hashes = &*hashes;
            parts
                .par_iter_mut()
                .for_each(|(first, image, counters, no)| {
                    no.clear();
                    // SAFETY: `kf` belongs to an available path (`kind_fns` checks); `image` and
                    // `counters` are the whole blocks `first ..` of this filter, cut from its
                    // exclusively borrowed words, and the kernel skips keys of other blocks.
                    unsafe { (kf.counting)(op, p, *first, image, counters, hashes, no) };
                });
            for (_, _, _, no) in &parts {
                for &i in no {
                    set_bit(refused, start + i as usize);
                }
                count += no.len() as u64;
            }
        }
        count
    }

    /// [`Probe::insert_counting`] into an owned counting or stable filter, whose key count
    /// grows by the number of keys (as the core's [`CountingFilter::insert`] counts them).
    pub fn insert_counting_filter(&self, filter: &mut CountingFilter, keys: Keys<'_>) {
        self.insert_counting(filter.as_view_mut(), keys);
        let n = keys.len() as u64;
        filter.set_key_count(filter.key_count().map(|k| k.saturating_add(n)));
    }

    /// [`Probe::remove_counting`] from an owned counting filter, whose key count shrinks by the
    /// number of keys deleted (as the core's [`CountingFilter::remove`] counts them).
    ///
    /// # Errors
    /// [`RemoveError::Unsupported`] (nothing changed) unless the filter is a counting filter.
    ///
    /// # Panics
    /// If `refused.len() != keys.len().div_ceil(64)`.
    pub fn remove_counting_filter(
        &self,
        filter: &mut CountingFilter,
        keys: Keys<'_>,
        refused: &mut [u64],
    ) -> Result<u64, RemoveError> {
        let no = self.remove_counting(filter.as_view_mut(), keys, refused)?;
        let done = keys.len() as u64 - no;
        filter.set_key_count(filter.key_count().map(|k| k.saturating_sub(done)));
        Ok(no)
    }
}
