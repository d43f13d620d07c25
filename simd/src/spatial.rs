//! Bulk operations of the spatial filter (`bloomlanes_core::SpatialFilter`), on the cell writes
//! and reads of `cells.rs`: an insert is the max of the key's class on its cells, a lookup the
//! smallest of its cells (its class; 0 for an absent key).
//!
//! Inserts leave exactly the image and cells of the core's key-by-key inserts (in any order:
//! max commutes, so the all-core inserts split the filter into block ranges or partitions
//! freely); lookups ([`Probe::min_cells`]) answer exactly the core's
//! [`SpatialFilter::class_of_hash`].
//!
//! ```
//! use bloomlanes_core::{Keys, Layout, Params, SpatialFilter};
//! use bloomlanes_simd::{Classes, Probe, Schedule};
//!
//! let probe = Probe::active();
//! let mut f = SpatialFilter::new(Params::new(Layout::L8x32, 64), 4, &["low", "high"]).unwrap();
//! let low: Vec<u64> = (0..500).collect();
//! let high: Vec<u64> = (500..600).collect();
//! let one = Schedule::OneThread;
//! probe.insert_spatial_filter(&mut f, Keys::U64(&low), Classes::One(1), one).unwrap();
//! let classes = vec![2u8; high.len()];
//! probe.insert_spatial_filter(&mut f, Keys::U64(&high), Classes::U8(&classes), one).unwrap();
//! assert_eq!(f.keys_per_class(), &[500, 100]);
//! let mut found = vec![0u8; 600];
//! let all: Vec<u64> = (0..600).collect();
//! probe.min_cells(&f, Keys::U64(&all), &mut found);
//! assert!(found[500..].iter().all(|&c| c == 2), "a class is never reported too low");
//! assert!(found[..500].iter().all(|&c| c >= 1));
//! ```

use bloomlanes_core::{CellsMut, FilterKind, Keys, SpatialError, SpatialFilter};

use crate::cells::{Classes, Schedule, Write};
use crate::{Probe, SimdPath};

impl Probe {
    /// The found bits of a batch of labels: bit `i % 64` of `found[i / 64]` is set where
    /// `labels[i] > 0` (bits past the last label cleared): the bitmap a static filter's lookups
    /// give, from a spatial filter's classes or a counting filter's counts. 16 labels a compare
    /// on the AVX-512 path.
    ///
    /// # Panics
    /// If `found.len() != labels.len().div_ceil(64)`.
    pub fn nonzero_bits(&self, labels: &[u32], found: &mut [u64]) {
        assert_eq!(
            found.len(),
            labels.len().div_ceil(64),
            "one found word per 64 labels"
        );
        let done = match self.path() {
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => {
                // SAFETY: a Probe's path is available on this CPU (only `Probe::new` makes
                // one), so it has AVX-512F.
                unsafe { crate::arch::x86_64::avx512::nonzero_bits(labels, found) }
            }
            _ => 0,
        };
        for (w, chunk) in found[done / 64..].iter_mut().zip(labels[done..].chunks(64)) {
            *w = (chunk.iter().enumerate()).fold(0, |w, (b, &c)| w | u64::from(c > 0) << b);
        }
    }

    /// Inserts every key into a spatial filter's cells on the calling thread, key `i` in class
    /// `classes.get(i)`: each of its cells becomes the larger of itself and the class (as the
    /// core's [`CellsMut::spatial_insert_hash`] key by key, whose words it leaves). The
    /// filter's key counts are not touched (see [`Probe::insert_spatial_filter`]). Large
    /// batches for filters beyond the caches are partitioned as counting inserts are.
    ///
    /// # Panics
    /// If the filter is not a spatial filter, or the classes are a list not as long as the keys.
    pub fn insert_spatial(&self, filter: CellsMut<'_>, keys: Keys<'_>, classes: Classes<'_>) {
        self.insert_spatial_with(filter, keys, classes, Schedule::OneThread);
    }

    /// [`Probe::insert_spatial`] on every core ([`Schedule::AllCores`]).
    ///
    /// # Panics
    /// As [`Probe::insert_spatial`].
    pub fn par_insert_spatial(&self, filter: CellsMut<'_>, keys: Keys<'_>, classes: Classes<'_>) {
        self.insert_spatial_with(filter, keys, classes, Schedule::AllCores);
    }

    /// [`Probe::insert_spatial`] as `how` says (the block ranges and forced partitions of
    /// [`Schedule`] are for tests and tuning; the scalar path runs the core's reference).
    ///
    /// # Panics
    /// As [`Probe::insert_spatial`].
    pub fn insert_spatial_with(
        &self,
        filter: CellsMut<'_>,
        keys: Keys<'_>,
        classes: Classes<'_>,
        how: Schedule,
    ) {
        assert!(
            matches!(filter.params().kind, FilterKind::Spatial { .. }),
            "not a spatial filter"
        );
        if let Some(n) = classes.len() {
            assert_eq!(n, keys.len(), "one class per key");
        }
        self.write_cells(filter, Write::max(classes), keys, &mut [], how);
    }

    /// [`Probe::insert_spatial_with`] into an owned spatial filter, whose per-class and total
    /// key counts grow as the core's [`SpatialFilter::insert`] counts them.
    ///
    /// # Errors
    /// [`SpatialError::NoSuchClass`] for the first class outside `1..=n` (nothing changed).
    ///
    /// # Panics
    /// If the classes are a list not as long as the keys.
    pub fn insert_spatial_filter(
        &self,
        filter: &mut SpatialFilter,
        keys: Keys<'_>,
        classes: Classes<'_>,
        how: Schedule,
    ) -> Result<(), SpatialError> {
        let n = u32::from(filter.classes());
        let mut bad = None;
        classes.for_each(keys.len(), |c, _| {
            if bad.is_none() && (c == 0 || c > n) {
                bad = Some(c);
            }
        });
        if let Some(c) = bad {
            // The core's check of the class names the error (and records nothing).
            return filter.record_inserts(c, 0);
        }
        self.insert_spatial_with(filter.as_view_mut(), keys, classes, how);
        let mut per_class = vec![0u64; n as usize + 1];
        classes.for_each(keys.len(), |c, k| per_class[c as usize] += k);
        for (c, &k) in per_class.iter().enumerate().skip(1).filter(|(_, &k)| k > 0) {
            filter.record_inserts(c as u32, k)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Probe, SimdPath};

    #[test]
    fn nonzero_bits_are_the_labels_above_zero_on_every_path() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for n in [0usize, 1, 15, 63, 64, 65, 130, 1000] {
            // About half zeros, the rest any value (high bits too).
            let labels: Vec<u32> = (0..n)
                .map(|_| {
                    s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((s >> 33) as u32).wrapping_mul(u32::from(s >> 63 == 1))
                })
                .collect();
            let mut want = vec![0u64; n.div_ceil(64)];
            for (i, &l) in labels.iter().enumerate() {
                want[i / 64] |= u64::from(l != 0) << (i % 64);
            }
            for path in SimdPath::ALL.into_iter().filter(|p| p.is_available()) {
                let mut found = vec![u64::MAX; n.div_ceil(64)];
                Probe::new(path).unwrap().nonzero_bits(&labels, &mut found);
                assert_eq!(found, want, "{path} n = {n}");
            }
        }
    }
}
