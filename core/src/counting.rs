//! The counting and stable filters' reference path over borrowed words (no allocator).
//!
//! Storage is the *projection* — the static byte image, bit set iff its counter is positive — and
//! one `c`-bit counter per bit of the image. Counter `k` belongs to image bit `k`
//! (`k = (block × L + lane) × W + bit`); counters are packed little-endian into 32-bit words,
//! `32 / c` per word, counter `k` at bits `c × (k mod 32/c)` of word `k / (32/c)`. Because the
//! projection is a static image, every static lookup path (SIMD, GPU, HDL) answers for a counting
//! filter unchanged, and its byte image exports to the static format and Parquet.

use crate::cell;
use crate::kind::CounterBits;
use crate::params::Params;

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

messages!(RemoveError {
    NotPresent => {
        "the key is not in the filter (one of its counters is zero); nothing was changed"
    },
    Unsupported => "only counting filters support deletions",
});

/// Reads counter `k` ([`cell::cell`] at the counter width).
#[inline(always)]
pub fn counter(counters: &[u32], bits: CounterBits, k: u64) -> u32 {
    cell::cell(counters, bits.into(), k)
}

/// Writes counter `k` ([`cell::set_cell`] at the counter width).
#[inline(always)]
pub fn set_counter(counters: &mut [u32], bits: CounterBits, k: u64, value: u32) {
    cell::set_cell(counters, bits.into(), k, value)
}

/// The counter (= image bit) index of lane `lane`'s bit for `hash` ([`cell::cell_index`]).
pub use crate::cell::cell_index as cell;

/// A mutable counting or stable filter over borrowed words: the cell algebra's
/// [`CellsMut`](crate::cell::CellsMut), whose counting methods are `insert_hash`, `remove_hash`
/// and `stable_insert_hash`.
pub type CountingMut<'a> = crate::cell::CellsMut<'a>;

/// Why borrowed words cannot be viewed as a counting filter.
pub type CountingShapeError = crate::cell::CellShapeError;

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
    cell::count_at_least(counters, bits.into(), bits.max())
}
