//! Sizing and error math for the blocked layout.
//!
//! The number of keys in a block is modelled as Poisson with mean `λ = n / z`; a query that lands
//! in a block holding `j` keys is a false positive with probability `(1 − (1 − 1/W)^j)^L`. The
//! expected false-positive rate is the Poisson mixture of that over `j`. This is much closer to
//! the truth for blocked filters than the classic `(1 − e^{−kn/m})^k`, which ignores the uneven
//! load of blocks.

use crate::layout::{Layout, MAX_BLOCKS};
use libm::{exp, expm1, lgamma, log, log1p, pow, sqrt};

/// Expected false-positive rate of a filter of `layout` with `blocks` blocks holding `keys` keys.
pub fn false_positive_rate(layout: Layout, blocks: u32, keys: u64) -> f64 {
    if keys == 0 || blocks == 0 {
        return if keys == 0 { 0.0 } else { 1.0 };
    }
    let lambda = keys as f64 / f64::from(blocks);
    // Past SATURATION_LOAD keys per block a lane bit is clear with probability below
    // (1 − 1/W)^(SATURATION_LOAD − 12·√SATURATION_LOAD − 12) < 1e-18 for every layout: the rate is
    // 1 (the sum below differs from it only by its own rounding, ~1e-12), and the sum (24·√λ
    // terms) would be needlessly long — unbounded for a hostile key count.
    if lambda >= SATURATION_LOAD {
        return 1.0;
    }
    let lanes = layout.lanes() as f64;
    // ln(1 - 1/W): each key in a block leaves a given lane bit clear with probability 1 − 1/W.
    let log_clear = log1p(-1.0 / f64::from(layout.word_bits()));
    let spread = 12.0 * sqrt(lambda) + 12.0;
    let lo = libm::floor(lambda - spread).max(0.0) as u64;
    let hi = libm::ceil(lambda + spread) as u64;
    let log_lambda = log(lambda);
    let mut total = 0.0;
    for j in lo..=hi {
        let jf = j as f64;
        let log_pmf = -lambda + jf * log_lambda - lgamma(jf + 1.0);
        // P(a given lane bit is set | j keys) = 1 − (1 − 1/W)^j = −expm1(j ln(1 − 1/W)).
        let set = -expm1(jf * log_clear);
        total += exp(log_pmf) * pow(set, lanes);
    }
    total.clamp(0.0, 1.0)
}

/// Keys per block from which [`false_positive_rate`] is 1 (to double precision) for every layout;
/// it bounds the formula's work to about 24·√4096 ≈ 1,600 terms whatever the key count.
pub const SATURATION_LOAD: f64 = 4096.0;

/// Why sizing failed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum SizingError {
    /// The target rate is not in the open interval (0, 1).
    BadRate(f64),
    /// Even the largest filter of this layout cannot reach the target for this many keys.
    Unreachable {
        /// The layout tried.
        layout: Layout,
        /// Keys asked for.
        keys: u64,
        /// Target false-positive rate.
        rate: f64,
    },
    /// Bits per key must be positive and finite.
    BadBitsPerKey(f64),
}

impl core::fmt::Display for SizingError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SizingError::BadRate(r) => {
                write!(
                    f,
                    "false-positive rate {r} must be between 0 and 1 (exclusive)"
                )
            }
            SizingError::Unreachable { layout, keys, rate } => write!(
                f,
                "layout {layout} cannot reach a false-positive rate of {rate} for {keys} keys \
                 within {MAX_BLOCKS} blocks"
            ),
            SizingError::BadBitsPerKey(b) => {
                write!(f, "bits per key {b} must be a positive finite number")
            }
        }
    }
}

impl core::error::Error for SizingError {}

/// The fewest blocks of `layout` for which `keys` keys give at most `rate` expected false positives.
pub fn blocks_for_rate(layout: Layout, keys: u64, rate: f64) -> Result<u32, SizingError> {
    if !(rate > 0.0 && rate < 1.0) {
        return Err(SizingError::BadRate(rate));
    }
    let meets = |z: u32| false_positive_rate(layout, z, keys) <= rate;
    if !meets(MAX_BLOCKS) {
        return Err(SizingError::Unreachable { layout, keys, rate });
    }
    // The rate falls as z grows: binary search for the first z that meets the target.
    let (mut lo, mut hi) = (1u32, MAX_BLOCKS);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}

/// Blocks of `layout` that give about `bits_per_key` bits for each of `keys` keys (at least one).
pub fn blocks_for_bits_per_key(
    layout: Layout,
    keys: u64,
    bits_per_key: f64,
) -> Result<u32, SizingError> {
    if !(bits_per_key.is_finite() && bits_per_key > 0.0) {
        return Err(SizingError::BadBitsPerKey(bits_per_key));
    }
    let blocks = libm::ceil(keys as f64 * bits_per_key / layout.block_bits() as f64).max(1.0);
    if blocks > f64::from(MAX_BLOCKS) {
        return Err(SizingError::Unreachable {
            layout,
            keys,
            rate: 0.0,
        });
    }
    Ok(blocks as u32)
}

/// The layout and block count that meet `rate` for `keys` keys in the fewest bits
/// (ties go to the smaller block, which costs less memory traffic per lookup).
pub fn auto_size(keys: u64, rate: f64) -> Result<(Layout, u32), SizingError> {
    let mut best: Option<(Layout, u32, u64)> = None;
    let mut last_err = SizingError::BadRate(rate);
    for layout in Layout::ALL {
        match blocks_for_rate(layout, keys, rate) {
            Ok(z) => {
                let bits = u64::from(z) * layout.block_bits() as u64;
                if best.is_none_or(|(_, _, b)| bits < b) {
                    best = Some((layout, z, bits));
                }
            }
            Err(e) => last_err = e,
        }
    }
    best.map(|(l, z, _)| (l, z)).ok_or(last_err)
}

/// Bits of filter per key.
pub fn bits_per_key(layout: Layout, blocks: u32, keys: u64) -> f64 {
    (f64::from(blocks) * layout.block_bits() as f64) / keys.max(1) as f64
}

/// Estimated number of distinct keys inserted, from the number of set bits.
///
/// Each key sets one bit in lane `i` of its block; over the whole filter that is one probe into
/// `z × W` bins per lane, so with `X` set bits per lane on average,
/// `n ≈ ln(1 − X / (zW)) / ln(1 − 1 / (zW))`. Returns `None` when every bit is set (no estimate).
pub fn estimate_keys(layout: Layout, blocks: u32, set_bits: u64) -> Option<f64> {
    let bins = f64::from(blocks) * f64::from(layout.word_bits());
    let per_lane = set_bits as f64 / layout.lanes() as f64;
    if per_lane >= bins {
        return None;
    }
    Some(log1p(-per_lane / bins) / log1p(-1.0 / bins))
}

/// Estimated size of the intersection of two key sets, by inclusion–exclusion over the
/// estimates of each set and of their union (the OR of the two filters). Never negative.
pub fn estimate_intersection(keys_a: f64, keys_b: f64, keys_union: f64) -> f64 {
    (keys_a + keys_b - keys_union).max(0.0)
}
