//! Sizing and error math for the blocked layout.
//!
//! The number of keys in a block is modelled as Poisson with mean `λ = n / z`; a query that lands
//! in a block holding `j` keys is a false positive with probability `(1 − (1 − 1/W)^j)^L`. The
//! expected false-positive rate is the Poisson mixture of that over `j`. This is much closer to
//! the truth for blocked filters than the classic `(1 − e^{−kn/m})^k`, which ignores the uneven
//! load of blocks.

use crate::layout::{Layout, MAX_BLOCKS};
use libm::{exp, expm1, lgamma, log, log1p, pow, sqrt};

mod spatial;
pub use spatial::{spatial_class_rates, spatial_class_rates_unblocked, ClassRates};

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

/// `rate` if it is a false-positive rate a filter can be sized for: in the open interval (0, 1)
/// (not NaN).
pub fn check_rate(rate: f64) -> Result<f64, SizingError> {
    if rate > 0.0 && rate < 1.0 {
        Ok(rate)
    } else {
        Err(SizingError::BadRate(rate))
    }
}

/// The fewest blocks of `layout` for which `keys` keys give at most `rate` expected false positives.
pub fn blocks_for_rate(layout: Layout, keys: u64, rate: f64) -> Result<u32, SizingError> {
    check_rate(rate)?;
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

/// Standard error (in keys) of [`estimate_keys`] for a filter holding about `keys` distinct keys:
/// at most that of one lane's linear count, `√(m (e^t − t − 1))` with `m = z × W` bins and
/// `t = n / m` (Whang, Vander-Zanden and Taylor, 1990). Each lane alone is such a count (a key
/// probes one uniform bin of the lane's `z × W`); the estimate averages the `L` lanes, whose
/// counts are correlated through the shared block choice, so its error is at most one lane's
/// (an average never varies more than its most variable term) and is given as that bound.
pub fn estimate_keys_standard_error(layout: Layout, blocks: u32, keys: f64) -> f64 {
    let bins = f64::from(blocks) * f64::from(layout.word_bits());
    let t = keys.max(0.0) / bins;
    // e^t − t − 1 = expm1(t) − t, without the cancellation of the naive form for small t.
    sqrt(bins * (expm1(t) - t).max(0.0))
}

/// Block counts that fold: `blocks` rounded up to the next number `m × 2^e` with `m` in `4 ..= 7`
/// (a 3-bit mantissa: 1, 2, …, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, …). Sizing derives a
/// block count from a key count that differs a little from input to input; rounding it onto this
/// grid gives similar inputs equal block counts (they merge as they are), and inputs of
/// different sizes often block counts that differ by a power of two, which merge by folding
/// ([`crate::fold`]). Rounding only goes up, so a rate target stays met. It costs memory: a
/// step is at most 25 % (from 4 × 2^e + 1 up to 5 × 2^e); over every block count from 64 to
/// 2^20 the mean is +9.5 % weighting them evenly on a log scale (+8.9 % weighting them evenly),
/// where a 4-bit mantissa (`m` in 8..=15) would cost +4.6 % (docs/FORMAT.md §7). Counts up to 8
/// are all on the grid and kept; a count whose grid point would pass `u32::MAX` is kept as it is.
pub fn fold_friendly_blocks(blocks: u32) -> u32 {
    if blocks <= 8 {
        return blocks.max(1);
    }
    // The grid's spacing at this size: 2^e with 4 × 2^e ≤ blocks < 8 × 2^e.
    let e = 31 - blocks.leading_zeros() - 2;
    let step = 1u32 << e;
    blocks.checked_next_multiple_of(step).unwrap_or(blocks)
}

/// Estimated size of the intersection of two key sets, by inclusion–exclusion over the
/// estimates of each set and of their union (the OR of the two filters). Never negative.
pub fn estimate_intersection(keys_a: f64, keys_b: f64, keys_union: f64) -> f64 {
    (keys_a + keys_b - keys_union).max(0.0)
}

/// Probability that a counter of a counting filter with `keys` keys in `blocks` blocks of
/// `layout` has reached `max` (and so sticks there).
///
/// A key adds 1 to one counter in each lane of its block, so a given counter receives on
/// average `μ = n / (z × W)` increments, Poisson distributed (the block's Poisson load thinned
/// by `1 / W`; the blocked layout does not change this marginal). The probability is
/// `P(Poisson(μ) ≥ max)`. For 4-bit counters at the optimal load `μ = ln 2` it is about 1.6e-15
/// per counter (Fan et al. give the bound `(e·μ/16)^16`).
pub fn counter_saturation_probability(layout: Layout, blocks: u32, keys: u64, max: u32) -> f64 {
    if keys == 0 {
        return 0.0;
    }
    let mu = keys as f64 / (f64::from(blocks) * f64::from(layout.word_bits()));
    if mu >= SATURATION_LOAD {
        return 1.0;
    }
    // P(X >= max) = 1 - sum_{x < max} pmf(x); for small tails sum the tail directly for accuracy.
    let log_mu = log(mu);
    let pmf = |x: u32| exp(-mu + f64::from(x) * log_mu - lgamma(f64::from(x) + 1.0));
    if mu < f64::from(max) {
        let mut tail = 0.0;
        let mut x = max;
        loop {
            let p = pmf(x);
            tail += p;
            if p < tail * 1e-17 || x > max + 4096 {
                break;
            }
            x += 1;
        }
        tail.clamp(0.0, 1.0)
    } else {
        let below: f64 = (0..max).map(pmf).sum();
        (1.0 - below).clamp(0.0, 1.0)
    }
}

/// Stable false-positive rate of a stable Bloom filter (Deng and Rafiei, 2006) in the paper's
/// model, where a key's `k` cells are independent: `(1 − P0)^K` with
/// `P0 = (1 / (1 + 1 / (P (1/K − 1/m))))^Max`, the probability that a cell is 0 at the stable
/// point. On the blocked layout a key's cells share a block, which makes them positively
/// correlated and the rate higher: see [`stable_false_positive_rate`].
pub fn stable_false_positive_rate_unblocked(cells: u64, k: u32, max: u32, decrements: u32) -> f64 {
    let (m, kf, p) = (cells as f64, f64::from(k), f64::from(decrements));
    let sub = p * (1.0 / kf - 1.0 / m);
    if sub <= 0.0 {
        return 1.0;
    }
    let p0 = pow(1.0 / (1.0 + 1.0 / sub), f64::from(max));
    pow(1.0 - p0, kf).clamp(0.0, 1.0)
}

/// Stable false-positive rate of a stable filter on the blocked layout: `blocks` blocks of
/// `layout` (`K = L` cells per key, one per lane of one block), counters of maximum `max`, and
/// `decrements` (`P`) cells decremented per insert, once it has reached its stable point.
///
/// Derivation. Looking back from now, inserts land in a query's block as a Poisson process of
/// rate `a = 1/z` (per insert), and each such insert sets each of the query's `K` cells to `Max`
/// with probability `w = 1/W`, independently per lane; each cell is decremented as a Poisson
/// process of rate `d = P / m` (`m = z·L·W` cells). A cell is positive iff it was set before
/// `Max` decrements hit it, i.e. before its own Erlang(Max, d) "deadline" `S_i`. So with
/// `A(s)` the block's arrivals by time `s` and `v = 1 − w`,
/// `FPR = E[Π_i (1 − v^{A(S_i)})] = Σ_t (−1)^t C(K, t) G(t)`, and by Campbell's theorem for the
/// Poisson process `G(t) = E[exp(−a·w Σ_{k=1..t} v^{t−k} S_(k))]` over the order statistics of
/// `t` deadlines. `G` is evaluated by nested quadrature (cumulative trapezoid on 8192 points of
/// the scaled Erlang density). With independent cells (`v^{t−k}` taken as 1) this reduces to
/// the paper's formula ([`stable_false_positive_rate_unblocked`]); the blocked rate is higher
/// (e.g. 0.0251 against 0.0195 for 8x32, 4096 blocks, 4-bit counters, P = 123), and it is the
/// one measurements match (see the `kinds` tests).
#[cfg(feature = "alloc")]
pub fn stable_false_positive_rate(layout: Layout, blocks: u32, max: u32, decrements: u32) -> f64 {
    use alloc::vec;
    const N: usize = 8192;
    let k = layout.lanes() as i32;
    let w = 1.0 / f64::from(layout.word_bits());
    let v = 1.0 - w;
    let m = f64::from(blocks) * layout.block_bits() as f64;
    let a = 1.0 / f64::from(blocks);
    let d = f64::from(decrements) / m;
    let mf = f64::from(max);
    // Scaled deadlines x = d·S ~ Gamma(Max, 1): grid [0, Max + 14 √Max + 20].
    let top = mf + 14.0 * sqrt(mf) + 20.0;
    let h = top / N as f64;
    let log_g: alloc::vec::Vec<f64> = (0..=N)
        .map(|i| {
            let x = i as f64 * h;
            if i == 0 {
                f64::NEG_INFINITY
            } else {
                (mf - 1.0) * log(x) - x - lgamma(mf)
            }
        })
        .collect();
    let mut total = 0.0;
    let mut binom = 1.0; // C(K, t)
    let mut fact = 1.0; // t!
    for t in 0..=k {
        if t > 0 {
            binom = binom * f64::from(k - t + 1) / f64::from(t);
            fact *= f64::from(t);
        }
        // I_j(x) = ∫_0^x g(y) e^{-β_j y} I_{j-1}(y) dy, β_j = a w v^{t-j} / d.
        let mut prev = vec![1.0f64; N + 1];
        let mut next = vec![0.0f64; N + 1];
        for j in 1..=t {
            let beta = a * w * pow(v, f64::from(t - j)) / d;
            let f = |i: usize| exp(log_g[i] - beta * i as f64 * h) * prev[i];
            let mut acc = 0.0;
            let mut last = f(0);
            next[0] = 0.0;
            for (i, out) in next.iter_mut().enumerate().skip(1) {
                let cur = f(i);
                acc += 0.5 * h * (last + cur);
                *out = acc;
                last = cur;
            }
            core::mem::swap(&mut prev, &mut next);
        }
        let g = fact * prev[N];
        total += if t % 2 == 0 { binom * g } else { -binom * g };
    }
    total.clamp(0.0, 1.0)
}

/// The smallest number of decrements per insert (P ≥ 1) for which a stable filter on the
/// blocked layout reaches a stable false-positive rate of at most `rate`
/// ([`stable_false_positive_rate`] is decreasing in P; bisection from the unblocked estimate),
/// or the most a file may hold ([`crate::kind_meta::max_decrements`]) if no P reaches it.
#[cfg(feature = "alloc")]
pub fn stable_decrements_for_rate(layout: Layout, blocks: u32, max: u32, rate: f64) -> u32 {
    let cells = u64::from(blocks) * layout.block_bits() as u64;
    let kf = layout.lanes() as f64;
    let inner = pow(1.0 - pow(rate, 1.0 / kf), -1.0 / f64::from(max)) - 1.0;
    let guess = 1.0 / (inner * (1.0 / kf - 1.0 / cells as f64));
    let guess = if guess.is_finite() {
        guess.clamp(1.0, 1e9) as u32
    } else {
        1
    };
    let meets = |p: u32| stable_false_positive_rate(layout, blocks, max, p) <= rate;
    let most = crate::kind_meta::max_decrements(&crate::Params::new(layout, blocks));
    let (mut lo, mut hi) = (guess.clamp(1, most), guess.clamp(1, most));
    while !meets(hi) {
        if hi == most {
            return most;
        }
        lo = hi;
        hi = hi.saturating_mul(2).min(most);
    }
    if meets(lo) {
        return lo;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if meets(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Worst-case false-positive rate of a sliding-window filter: `generations + 1` generations of
/// `blocks` blocks, each holding up to `span` keys (a key is found if one generation has all its
/// bits): `1 − (1 − FPR(z, span))^(g + 1)`.
pub fn window_false_positive_rate(layout: Layout, blocks: u32, span: u64, generations: u16) -> f64 {
    let f = false_positive_rate(layout, blocks, span);
    (1.0 - pow(1.0 - f, f64::from(generations) + 1.0)).clamp(0.0, 1.0)
}

/// The fewest blocks per generation for which a sliding window of `generations` generations of
/// `span` keys meets `rate` (see [`window_false_positive_rate`]).
pub fn blocks_for_window_rate(
    layout: Layout,
    span: u64,
    generations: u16,
    rate: f64,
) -> Result<u32, SizingError> {
    check_rate(rate)?;
    // The per-generation rate that gives `rate` over g + 1 generations.
    let per = 1.0 - pow(1.0 - rate, 1.0 / (f64::from(generations) + 1.0));
    let z = blocks_for_rate(layout, span.max(1), per)?;
    Ok(z)
}

/// The most generations [`smallest_window`] considers: past about 10 the window's bits grow
/// again at every rate (the union over more generations costs more than the thinner slack
/// saves), and every generation is one more block to read per lookup.
pub const MAX_AUTO_GENERATIONS: u16 = 16;

/// The shape of a sliding-window filter: its layout, generations and blocks per generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowShape {
    /// Block layout of every generation.
    pub layout: Layout,
    /// Generations that make up the window (`g`; one more holds the newest keys).
    pub generations: u16,
    /// Blocks per generation.
    pub blocks: u32,
}

impl WindowShape {
    /// Bits of the whole filter: `(g + 1) × z × block bits`.
    pub fn bits(&self) -> u64 {
        (u64::from(self.generations) + 1) * u64::from(self.blocks) * self.layout.block_bits() as u64
    }
}

/// The window over `window` keys that meets `rate` (worst case, [`window_false_positive_rate`])
/// in the fewest bits, over the layouts `layouts` and 1 to [`MAX_AUTO_GENERATIONS`] generations
/// of `⌈window / g⌉` keys. Ties go to fewer generations, then to the earlier layout (list them
/// smallest block first: less to read per lookup).
///
/// The space has a floor at each rate: `g + 1` generations must each meet about
/// `rate / (g + 1)`, and one generation of slack is always held. With split blocks that is about
/// 1.70× a static filter's bits at 1 %, 1.50× at 0.1 % and 1.42× at 0.01 % (BENCHMARKS.md).
pub fn smallest_window(
    window: u64,
    rate: f64,
    layouts: &[Layout],
) -> Result<WindowShape, SizingError> {
    let mut best: Option<WindowShape> = None;
    let mut last_err = SizingError::BadRate(rate);
    for generations in 1..=MAX_AUTO_GENERATIONS {
        let span = window.max(1).div_ceil(u64::from(generations));
        for &layout in layouts {
            match blocks_for_window_rate(layout, span, generations, rate) {
                Ok(blocks) => {
                    let shape = WindowShape {
                        layout,
                        generations,
                        blocks,
                    };
                    if best.is_none_or(|b| shape.bits() < b.bits()) {
                        best = Some(shape);
                    }
                }
                Err(e) => last_err = e,
            }
        }
    }
    best.ok_or(last_err)
}

/// Capacity of stage `stage` of a scalable filter that starts at `initial` keys and grows by
/// `growth`: `initial × growth^stage` (saturating).
pub fn scalable_stage_capacity(initial: u64, growth: u8, stage: u32) -> u64 {
    let mut c = initial.max(1);
    for _ in 0..stage {
        c = c.saturating_mul(u64::from(growth.max(2)));
    }
    c
}

/// False-positive rate target of stage `stage` of a scalable filter for an overall `rate` and
/// tightening ratio `r`: `rate × (1 − r) × r^stage`, so that the compound rate
/// `1 − Π (1 − P_i)` stays below `rate` for any number of stages (Almeida et al., 2007).
pub fn scalable_stage_rate(rate: f64, tightening: f64, stage: u32) -> f64 {
    rate * (1.0 - tightening) * pow(tightening, f64::from(stage))
}
