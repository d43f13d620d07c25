//! Bulk operations of the spatial filter (`bloomlanes_core::SpatialFilter`), on the cell writes
//! and reads of `cells.rs`: an insert is the max of the key's class on its cells, a lookup the
//! smallest of its cells (its class; 0 for an absent key).
//!
//! Inserts leave exactly the image and cells of the core's key-by-key inserts (in any order:
//! max commutes, so the all-core inserts split the filter into block ranges or partitions
//! freely), lookups answer exactly the core's [`SpatialFilter::class_of_hash`].
//!
//! ```
//! use bloomlanes_core::{Keys, Layout, Params, SpatialFilter};
//! use bloomlanes_simd::{Classes, Probe};
//!
//! let probe = Probe::active();
//! let mut f = SpatialFilter::new(Params::new(Layout::L8x32, 64), 4, &["low", "high"]).unwrap();
//! let low: Vec<u64> = (0..500).collect();
//! let high: Vec<u64> = (500..600).collect();
//! probe.insert_spatial_filter(&mut f, Keys::U64(&low), Classes::One(1)).unwrap();
//! let classes = vec![2u8; high.len()];
//! probe.insert_spatial_filter(&mut f, Keys::U64(&high), Classes::U8(&classes)).unwrap();
//! assert_eq!(f.keys_per_class(), &[500, 100]);
//! let mut found = vec![0u8; 600];
//! let all: Vec<u64> = (0..600).collect();
//! probe.spatial_classes(&f, Keys::U64(&all), &mut found);
//! assert!(found[500..].iter().all(|&c| c == 2), "a class is never reported too low");
//! assert!(found[..500].iter().all(|&c| c >= 1));
//! ```

use bloomlanes_core::{CellsMut, FilterKind, Keys, SpatialError, SpatialFilter};

use crate::cells::{CellValue, Classes, Write};
use crate::Probe;

/// A spatial insert's checks: a spatial filter, and a class per key if not one for all.
fn spatial_write<'c>(filter: &CellsMut<'_>, keys: Keys<'_>, classes: Classes<'c>) -> Write<'c> {
    assert!(
        matches!(filter.params().kind, FilterKind::Spatial { .. }),
        "not a spatial filter"
    );
    if let Some(n) = classes.len() {
        assert_eq!(n, keys.len(), "one class per key");
    }
    Write::max(classes)
}

impl Probe {
    /// Inserts every key into a spatial filter's cells, key `i` in class `classes.get(i)`:
    /// each of its cells becomes the larger of itself and the class (as the core's
    /// [`CellsMut::spatial_insert_hash`] key by key, whose words it leaves). The filter's key
    /// counts are not touched (see [`Probe::insert_spatial_filter`]). Large batches for filters
    /// beyond the caches are partitioned as counting inserts are.
    ///
    /// # Panics
    /// If the filter is not a spatial filter, or the classes are a list not as long as the keys.
    pub fn insert_spatial<'c>(
        &self,
        filter: CellsMut<'_>,
        keys: Keys<'_>,
        classes: impl Into<Classes<'c>>,
    ) {
        let w = spatial_write(&filter, keys, classes.into());
        self.write_cells(filter, w, keys, &mut [], false);
    }

    /// [`Probe::insert_spatial`] on every core (rayon's current pool): partitioned (a few
    /// partitions per thread) where the one-thread insert would be, else over one block range
    /// per thread. One-thread pools, the scalar path and batches under
    /// [`crate::PAR_INSERT_MIN_KEYS`] keys take the one-thread insert.
    ///
    /// # Panics
    /// As [`Probe::insert_spatial`].
    pub fn par_insert_spatial<'c>(
        &self,
        filter: CellsMut<'_>,
        keys: Keys<'_>,
        classes: impl Into<Classes<'c>>,
    ) {
        let w = spatial_write(&filter, keys, classes.into());
        self.write_cells(filter, w, keys, &mut [], true);
    }

    /// [`Probe::par_insert_spatial`] over exactly `ranges` block ranges (at least 1), without
    /// a one-thread fallback, for tests and tuning (the scalar path runs the reference).
    ///
    /// # Panics
    /// As [`Probe::insert_spatial`].
    pub fn par_spatial_ranges<'c>(
        &self,
        filter: CellsMut<'_>,
        keys: Keys<'_>,
        classes: impl Into<Classes<'c>>,
        ranges: usize,
    ) {
        let w = spatial_write(&filter, keys, classes.into());
        self.write_cells_ranges(filter, w, keys, ranges, &mut []);
    }

    /// [`Probe::insert_spatial`], always partitioned with this probe's
    /// [`crate::Partitioning`] sizes (whatever its mode), on every core if `parallel`, for tests
    /// and tuning (the scalar path runs the reference).
    ///
    /// # Panics
    /// As [`Probe::insert_spatial`].
    pub fn spatial_partitioned<'c>(
        &self,
        filter: CellsMut<'_>,
        keys: Keys<'_>,
        classes: impl Into<Classes<'c>>,
        parallel: bool,
    ) {
        let w = spatial_write(&filter, keys, classes.into());
        self.write_cells_partitioned(filter, w, keys, &mut [], parallel);
    }

    /// [`Probe::insert_spatial`] into an owned spatial filter, whose per-class and total key
    /// counts grow as the core's [`SpatialFilter::insert`] counts them.
    ///
    /// # Errors
    /// [`SpatialError::NoSuchClass`] for the first class outside `1..=n` (nothing changed).
    ///
    /// # Panics
    /// If the classes are a list not as long as the keys.
    pub fn insert_spatial_filter<'c>(
        &self,
        filter: &mut SpatialFilter,
        keys: Keys<'_>,
        classes: impl Into<Classes<'c>>,
    ) -> Result<(), SpatialError> {
        self.insert_spatial_filter_on(filter, keys, classes.into(), false)
    }

    /// [`Probe::insert_spatial_filter`] on every core, as [`Probe::par_insert_spatial`].
    ///
    /// # Errors
    /// As [`Probe::insert_spatial_filter`].
    ///
    /// # Panics
    /// As [`Probe::insert_spatial_filter`].
    pub fn par_insert_spatial_filter<'c>(
        &self,
        filter: &mut SpatialFilter,
        keys: Keys<'_>,
        classes: impl Into<Classes<'c>>,
    ) -> Result<(), SpatialError> {
        self.insert_spatial_filter_on(filter, keys, classes.into(), true)
    }

    fn insert_spatial_filter_on(
        &self,
        filter: &mut SpatialFilter,
        keys: Keys<'_>,
        classes: Classes<'_>,
        parallel: bool,
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
        let w = spatial_write(&filter.as_view_mut(), keys, classes);
        self.write_cells(filter.as_view_mut(), w, keys, &mut [], parallel);
        let mut per_class = vec![0u64; n as usize + 1];
        classes.for_each(keys.len(), |c, k| per_class[c as usize] += k);
        for (c, &k) in per_class.iter().enumerate().skip(1).filter(|(_, &k)| k > 0) {
            filter.record_inserts(c as u32, k)?;
        }
        Ok(())
    }

    /// Looks up every key's class: `out[i]` is the smallest of key `i`'s cells (the core's
    /// [`SpatialFilter::class_of_hash`]), 0 if it is absent. Absent keys are answered from the
    /// image alone; the cells of upcoming keys are prefetched.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`, or `T` is narrower than the cells (`u8` for 4- and 8-bit
    /// cells, `u16` or `u32` for any).
    pub fn spatial_classes<T: CellValue>(
        &self,
        filter: &SpatialFilter,
        keys: Keys<'_>,
        out: &mut [T],
    ) {
        let (p, image, cells) = (filter.params(), filter.image_words(), filter.cell_words());
        self.read_min(p, image, cells, keys, out, false);
    }

    /// [`Probe::spatial_classes`] on every core (rayon's current pool), in chunks of 16 Ki
    /// keys.
    ///
    /// # Panics
    /// As [`Probe::spatial_classes`].
    pub fn par_spatial_classes<T: CellValue>(
        &self,
        filter: &SpatialFilter,
        keys: Keys<'_>,
        out: &mut [T],
    ) {
        let (p, image, cells) = (filter.params(), filter.image_words(), filter.cell_words());
        self.read_min(p, image, cells, keys, out, true);
    }
}
