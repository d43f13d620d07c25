//! Bulk operations of the counting and stable filters (`bloomlanes_core::counting`), on the
//! cell writes and reads of `cells.rs`.
//!
//! Every operation leaves exactly the image and counters of the core's key-by-key path in input
//! order ([`CountingMut::insert_hash`], [`CountingMut::remove_hash`],
//! [`CountingMut::stable_insert_hash`]): keys of one batch that share counters see each other's
//! updates, a delete that finds a counter at zero is refused and changes nothing. Lookups are
//! static lookups of the projection: [`Probe::contains`] of [`CountingMut::projection`] or
//! [`CountingFilter::projection`]; [`Probe::min_cells`] answers each key's count.
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
//! let mut counts = vec![0u8; 500];
//! probe.min_cells(&f, Keys::U64(&keys[500..]), &mut counts);
//! assert!(counts.iter().all(|&c| c >= 1));
//! ```

use bloomlanes_core::{CountingFilter, CountingMut, FilterKind, Keys, RemoveError};

use crate::cells::{grown, Schedule, Write};
use crate::kind_entry::{hash_into, kind_fns, CHUNK};
use crate::Probe;

/// Whether `filter` is a counting filter (not a stable one).
fn is_counting(filter: &CountingMut<'_>) -> bool {
    matches!(filter.params().kind, FilterKind::Counting { .. })
}

/// A counting delete's checks: a counting filter and one refused bit per key.
fn check_delete(
    filter: &CountingMut<'_>,
    keys: Keys<'_>,
    refused: &[u64],
) -> Result<(), RemoveError> {
    if !is_counting(filter) {
        return Err(RemoveError::Unsupported);
    }
    assert_eq!(
        refused.len(),
        keys.len().div_ceil(64),
        "one refused bit per key"
    );
    Ok(())
}

/// The one-thread and all-core counting deletes, written once: each runs
/// [`Probe::counting_with`] with its [`Schedule`].
macro_rules! deletes {
    ($($(#[$doc:meta])* $name:ident: $how:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(
            &self,
            filter: CountingMut<'_>,
            keys: Keys<'_>,
            refused: &mut [u64],
        ) -> Result<u64, RemoveError> {
            self.counting_with(filter, keys, true, refused, $how)
        }
    )*};
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
    pub fn insert_counting(&self, filter: CountingMut<'_>, keys: Keys<'_>) {
        self.insert_counting_on(filter, keys, Schedule::OneThread);
    }

    /// [`Probe::insert_counting`] as `how` says (counting filters; stable inserts run on one
    /// thread).
    fn insert_counting_on(&self, mut filter: CountingMut<'_>, keys: Keys<'_>, how: Schedule) {
        let p = *filter.params();
        let FilterKind::Stable { decrements, .. } = p.kind else {
            self.write_cells(filter, Write::INC, keys, &mut [], how);
            return;
        };
        let Some(kf) = kind_fns(self.path) else {
            for i in 0..keys.len() {
                filter.stable_insert_hash(keys.hash(i, p.seed), decrements);
            }
            return;
        };
        let mut buf = vec![0u64; CHUNK.min(keys.len())];
        let (image, counters) = filter.parts_mut();
        for start in (0..keys.len()).step_by(CHUNK) {
            let chunk = keys.slice(start..(start + CHUNK).min(keys.len()));
            let hashes = &mut buf[..chunk.len()];
            hash_into(self, chunk, p.seed, hashes);
            // SAFETY: `kf` belongs to an available path (`kind_fns` checks); the kernel checks
            // the shapes of the image and counters, which a CountingMut holds for `p`.
            unsafe { (kf.stable)(p, decrements, image, counters, hashes) };
        }
    }

    /// [`Probe::insert_counting`] on every core (rayon's current pool) for a counting filter,
    /// leaving exactly the words of the sequential insert: partitioned (a few partitions per
    /// thread) where the sequential insert would be, else the blocks are split into one
    /// range per thread and each range's task applies, in input order, the keys that fall into
    /// it (increments of different blocks are independent). Stable filters (whose inserts
    /// decrement cells anywhere), one-thread pools, the scalar path and batches under
    /// [`crate::PAR_INSERT_MIN_KEYS`] keys take the sequential insert.
    pub fn par_insert_counting(&self, filter: CountingMut<'_>, keys: Keys<'_>) {
        self.insert_counting_on(filter, keys, Schedule::AllCores);
    }

    /// [`Probe::insert_counting`] into an owned counting or stable filter, whose key count
    /// grows by the number of keys (as the core's [`CountingFilter::insert`] counts them).
    pub fn insert_counting_filter(&self, filter: &mut CountingFilter, keys: Keys<'_>) {
        self.insert_counting(filter.as_view_mut(), keys);
        filter.set_key_count(grown(filter.key_count(), keys.len(), 0));
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
        filter.set_key_count(grown(filter.key_count(), no as usize, keys.len()));
        Ok(no)
    }

    deletes! {
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
        remove_counting: Schedule::OneThread;
        /// [`Probe::remove_counting`] on every core (rayon's current pool), with exactly its
        /// result: one block range per thread, each range's keys deleted in input order (a key's
        /// delete depends only on its own block), or partitioned. One-thread pools, the scalar
        /// path and batches under [`crate::PAR_INSERT_MIN_KEYS`] keys take the sequential delete.
        ///
        /// # Errors
        /// [`RemoveError::Unsupported`] (nothing changed) unless the filter is a counting filter.
        ///
        /// # Panics
        /// If `refused.len() != keys.len().div_ceil(64)`.
        par_remove_counting: Schedule::AllCores;
    }

    /// A counting insert or delete (`remove`) as `how` says (the block ranges and forced
    /// partitions of [`Schedule`] are for tests and tuning); the result and `refused` are as
    /// for [`Probe::remove_counting`] (`refused` is ignored for inserts). The scalar path runs
    /// the core's reference.
    ///
    /// # Errors
    /// [`RemoveError::Unsupported`] (nothing changed) for a filter that is not a counting
    /// filter, for inserts too: stable inserts run on one thread ([`Probe::insert_counting`]).
    ///
    /// # Panics
    /// For deletes, if `refused.len() != keys.len().div_ceil(64)`.
    pub fn counting_with(
        &self,
        filter: CountingMut<'_>,
        keys: Keys<'_>,
        remove: bool,
        refused: &mut [u64],
        how: Schedule,
    ) -> Result<u64, RemoveError> {
        if !remove {
            if !is_counting(&filter) {
                return Err(RemoveError::Unsupported);
            }
            return Ok(self.write_cells(filter, Write::INC, keys, &mut [], how));
        }
        check_delete(&filter, keys, refused)?;
        Ok(self.write_cells(filter, Write::DEC, keys, refused, how))
    }
}
