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
use crate::Probe;

impl Probe {
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
