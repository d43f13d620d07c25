//! The counting and stable filters' reference path over borrowed words (no allocator).
//!
//! Storage is the *projection* — the static byte image, bit set iff its counter is positive — and
//! one `c`-bit counter per bit of the image. Counter `k` belongs to image bit `k`
//! (`k = (block × L + lane) × W + bit`); counters are packed little-endian into 32-bit words,
//! `32 / c` per word, counter `k` at bits `c × (k mod 32/c)` of word `k / (32/c)`. Because the
//! projection is a static image, every static lookup path (SIMD, GPU, HDL) answers for a counting
//! filter unchanged, and its byte image exports to the static format and Parquet.

use crate::kind::CounterBits;
use crate::layout::{block_index, lane_bit, Layout};
use crate::params::Params;
use crate::reference::FilterRef;

/// The 32-bit words of counters a filter with `params` needs (`z × L × W × c / 32`).
pub const fn counter_words(params: &Params, bits: CounterBits) -> u64 {
    params.bit_len() * bits.bits() as u64 / 32
}

/// Why a key cannot be deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoveError {
    /// One of the key's counters is zero: the key is not in the filter (nothing was changed).
    NotPresent,
    /// This kind of filter does not support deletions (only counting filters do).
    Unsupported,
}

impl core::fmt::Display for RemoveError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            RemoveError::NotPresent => {
                "the key is not in the filter (one of its counters is zero); nothing was changed"
            }
            RemoveError::Unsupported => "only counting filters support deletions",
        })
    }
}

impl core::error::Error for RemoveError {}

/// Reads counter `k`.
#[inline(always)]
pub fn counter(counters: &[u32], bits: CounterBits, k: u64) -> u32 {
    let per = 32 / bits.bits() as u64;
    let shift = (k % per) as u32 * bits.bits();
    (counters[(k / per) as usize] >> shift) & bits.max()
}

/// Writes counter `k`.
#[inline(always)]
pub fn set_counter(counters: &mut [u32], bits: CounterBits, k: u64, value: u32) {
    let per = 32 / bits.bits() as u64;
    let shift = (k % per) as u32 * bits.bits();
    let w = &mut counters[(k / per) as usize];
    *w = (*w & !(bits.max() << shift)) | ((value & bits.max()) << shift);
}

/// The counter (= image bit) index of lane `lane`'s bit for `hash`.
#[inline(always)]
pub fn cell(layout: Layout, blocks: u32, hash: u64, lane: usize) -> u64 {
    let b = u64::from(block_index(hash, blocks));
    (b * layout.lanes() as u64 + lane as u64) * u64::from(layout.word_bits())
        + u64::from(lane_bit(layout, hash, lane))
}

#[inline(always)]
fn set_bit(image: &mut [u32], k: u64, on: bool) {
    let (w, m) = ((k / 32) as usize, 1u32 << (k % 32));
    if on {
        image[w] |= m;
    } else {
        image[w] &= !m;
    }
}

/// A mutable counting (or stable) filter over borrowed words: its parameters, the projection
/// image and the counters.
#[derive(Debug)]
pub struct CountingMut<'a> {
    params: Params,
    bits: CounterBits,
    image: &'a mut [u32],
    counters: &'a mut [u32],
}

/// Why borrowed words cannot be viewed as a counting filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CountingShapeError {
    /// The parameters are not of a counting or stable filter.
    NotCounting,
    /// The image is not `z × L × W / 32` words.
    Image,
    /// The counters are not `z × L × W × c / 32` words.
    Counters,
}

impl core::fmt::Display for CountingShapeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            CountingShapeError::NotCounting => "the parameters are not of a counting filter",
            CountingShapeError::Image => "the image is not the length the parameters need",
            CountingShapeError::Counters => "the counters are not the length the parameters need",
        })
    }
}

impl core::error::Error for CountingShapeError {}

impl<'a> CountingMut<'a> {
    /// Views the words of a counting or stable filter with `params`.
    pub fn new(
        params: Params,
        image: &'a mut [u32],
        counters: &'a mut [u32],
    ) -> Result<Self, CountingShapeError> {
        let bits = params
            .kind
            .counter_bits()
            .ok_or(CountingShapeError::NotCounting)?;
        if image.len() as u64 != params.u32_len() {
            return Err(CountingShapeError::Image);
        }
        if counters.len() as u64 != counter_words(&params, bits) {
            return Err(CountingShapeError::Counters);
        }
        Ok(CountingMut {
            params,
            bits,
            image,
            counters,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The projection as a static filter view (bit set iff its counter is positive).
    pub fn projection(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.params, self.image).expect("the shape was checked")
    }

    /// The image and the counters, for a bulk backend.
    pub fn parts_mut(&mut self) -> (&mut [u32], &mut [u32]) {
        (self.image, self.counters)
    }

    /// Whether the key with hash `hash` may be present (all its counters positive).
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.projection().contains_hash(hash)
    }

    /// Counting insert: every counter of the key + 1; a counter at the maximum stays there.
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        let (layout, blocks, max) = (self.params.layout, self.params.blocks, self.bits.max());
        for lane in 0..layout.lanes() {
            let k = cell(layout, blocks, hash, lane);
            let v = counter(self.counters, self.bits, k);
            if v < max {
                set_counter(self.counters, self.bits, k, v + 1);
            }
            set_bit(self.image, k, true);
        }
    }

    /// Counting delete: every counter of the key − 1 (a counter at the maximum stays there; one
    /// that reaches 0 clears its image bit). Refused, changing nothing, unless all the key's
    /// counters are positive.
    #[inline]
    pub fn remove_hash(&mut self, hash: u64) -> Result<(), RemoveError> {
        if !self.contains_hash(hash) {
            return Err(RemoveError::NotPresent);
        }
        let (layout, blocks, max) = (self.params.layout, self.params.blocks, self.bits.max());
        for lane in 0..layout.lanes() {
            let k = cell(layout, blocks, hash, lane);
            let v = counter(self.counters, self.bits, k);
            if v < max {
                set_counter(self.counters, self.bits, k, v - 1);
                if v == 1 {
                    set_bit(self.image, k, false);
                }
            }
        }
        Ok(())
    }

    /// Stable-filter insert (Deng and Rafiei): decrement the `decrements` cells that
    /// [`stable_cells`] picks from the key's hash (a cell at 0 stays 0; one that reaches 0 clears
    /// its image bit), then set every counter of the key to the maximum.
    #[inline]
    pub fn stable_insert_hash(&mut self, hash: u64, decrements: u32) {
        let cells = self.params.bit_len();
        for k in stable_cells(hash, cells, decrements) {
            let v = counter(self.counters, self.bits, k);
            if v > 0 {
                set_counter(self.counters, self.bits, k, v - 1);
                if v == 1 {
                    set_bit(self.image, k, false);
                }
            }
        }
        let (layout, blocks, max) = (self.params.layout, self.params.blocks, self.bits.max());
        for lane in 0..layout.lanes() {
            let k = cell(layout, blocks, hash, lane);
            set_counter(self.counters, self.bits, k, max);
            set_bit(self.image, k, true);
        }
    }
}

/// The cells a stable-filter insert of `hash` decrements, among `cells` cells: `count` draws of
/// SplitMix64 seeded with the hash, each mapped to `(draw × cells) >> 64`. Every backend uses this
/// sequence, so their counters agree bit for bit.
pub fn stable_cells(hash: u64, cells: u64, count: u32) -> impl Iterator<Item = u64> {
    let mut state = hash;
    (0..count).map(move |_| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((u128::from(z) * u128::from(cells)) >> 64) as u64
    })
}

/// Counts the counters at the maximum (stuck: never decremented by a counting delete).
pub fn saturated(counters: &[u32], bits: CounterBits) -> u64 {
    let (c, max) = (bits.bits(), bits.max());
    counters
        .iter()
        .map(|&w| (0..32 / c).filter(|i| (w >> (i * c)) & max == max).count() as u64)
        .sum()
}
