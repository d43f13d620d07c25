//! The kinds' filters as every benchmark fills them: counting filters beside a static filter
//! of the same blocks, spatial filters of a given total size.

use bloomlanes_core::{CounterBits, CountingFilter, Keys, Layout, Params, SpatialFilter};
use bloomlanes_simd::{Classes, Probe, Schedule};

use crate::{random, BITS_PER_KEY};

/// The benchmarks' layout.
pub const LAYOUT: Layout = Layout::L8x32;

/// A counting filter of `blocks` 8x32 blocks and `bits`-bit counters, with `keys` inserted on
/// every core.
pub fn counting_filter(
    probe: &Probe,
    blocks: u32,
    bits: CounterBits,
    keys: &[u64],
) -> CountingFilter {
    let mut f = CountingFilter::counting(Params::new(LAYOUT, blocks), bits);
    probe.par_insert_counting(f.as_view_mut(), Keys::U64(keys));
    f
}

/// A counting insert or delete (`remove`) of `keys`, on every core if `par`; a delete must
/// find every key (`refused`: one bit per key).
///
/// # Panics
/// If a delete refuses a key.
pub fn counting_write(
    probe: &Probe,
    f: &mut CountingFilter,
    keys: Keys<'_>,
    refused: &mut [u64],
    remove: bool,
    par: bool,
) {
    let v = f.as_view_mut();
    match (remove, par) {
        (false, false) => probe.insert_counting(v, keys),
        (false, true) => probe.par_insert_counting(v, keys),
        (true, false) => assert_eq!(probe.remove_counting(v, keys, refused), Ok(0)),
        (true, true) => assert_eq!(probe.par_remove_counting(v, keys, refused), Ok(0)),
    }
}

/// A spatial filter of about `total_bytes` bytes (image and `cell_bits`-bit cells together)
/// with `classes` classes, filled to [`BITS_PER_KEY`] bits per key of its image: its keys, each
/// in a class drawn at random, and their classes.
pub struct SpatialSetup {
    /// The filter.
    pub filter: SpatialFilter,
    /// The keys inserted.
    pub keys: Vec<u64>,
    /// Key `i`'s class.
    pub classes: Vec<u16>,
}

impl SpatialSetup {
    /// The filled filter (keys from `seed`, classes from `seed + 1`; at most `cap` keys).
    pub fn new(
        probe: &Probe,
        total_bytes: usize,
        cell_bits: u32,
        classes: u16,
        seed: u64,
        cap: usize,
    ) -> SpatialSetup {
        let image = total_bytes / (1 + cell_bits as usize);
        let blocks = (image / LAYOUT.block_bytes()).max(1) as u32;
        let names: Vec<String> = (1..=classes).map(|c| format!("class{c}")).collect();
        let mut filter = SpatialFilter::new(Params::new(LAYOUT, blocks), cell_bits, &names)
            .expect("a spatial shape");
        let n = (blocks as usize * LAYOUT.block_bytes() * 8 / BITS_PER_KEY).min(cap);
        let keys = random(n, seed);
        let classes: Vec<u16> = random(n, seed + 1)
            .into_iter()
            .map(|r| 1 + (r % u64::from(classes)) as u16)
            .collect();
        let (cs, all) = (Classes::U16(&classes), Schedule::AllCores);
        probe
            .insert_spatial_filter(&mut filter, Keys::U64(&keys), cs, all)
            .expect("classes 1 to n");
        SpatialSetup {
            filter,
            keys,
            classes,
        }
    }

    /// The filter's bytes: image and cells.
    pub fn bytes(&self) -> usize {
        (self.filter.image_words().len() + self.filter.cell_words().len()) * 4
    }
}
