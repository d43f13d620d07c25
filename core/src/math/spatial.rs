//! Expected rates of spatial filters on the blocked layout: the formulas of the spatial Bloom
//! filter (Palmieri, Calderoni and Maio, 2014; Calderoni, Palmieri and Maio, 2018; libSBF)
//! adapted to blocks (`docs/FORMAT.md` §9, "Spatial rates").
//!
//! A spatial filter holds `n_c` keys of class `c` (`1 ≤ c ≤ n`); a key touches one cell per lane
//! of one block, and a cell holds the largest class written to it. Write `N_{>c}` for the keys
//! of the classes above `c` and `F(N)` for the blocked false-positive rate of `N` keys
//! ([`false_positive_rate`]). Then:
//!
//! - an absent key is reported in class `c` or above iff each of its `L` cells was hit by a key
//!   of class `≥ c`: the keys of those classes in its block are Poisson with mean `N_{≥c} / z`
//!   (the classes are independent thinnings of one Poisson load), and each hits the key's cell in
//!   a lane with probability `1/W`, independently per lane; so `P(reported ≥ c) = F(N_{≥c})` and
//!   the **false-positive rate of class `c`** (libSBF's a-priori area fpp) is
//!   `F(N_{≥c}) − F(N_{>c})`;
//! - a key of class `c` is reported above `c` iff each of its cells was hit by a key of a class
//!   above `c`; the other keys in its block are again Poisson (each of the `N_{>c}` lands there
//!   with probability `1/z`), so the **emersion rate of class `c`** (libSBF's a-priori inter-set
//!   error) is `F(N_{>c})`, and 0 for the top class;
//! - a cell holds `c` iff some key of class `c` hit it and none above: with `q = 1 − 1/(zW)`
//!   (a key hits a given cell of its lane's `z·W` with probability `1/(zW)`), the **expected
//!   cells of class `c`** are `z·L·W · (1 − q^{n_c}) · q^{N_{>c}}` (libSBF's expected area
//!   cells), exactly: the blocked layout changes no cell's marginal.
//!
//! The classic formulas replace `F(N)` by `(1 − (1 − 1/m)^{kN})^k` (`m` cells, `k` hashes), which
//! ignores the uneven load of blocks and underestimates both rates of a blocked filter
//! ([`spatial_class_rates_unblocked`]).

use super::false_positive_rate;
use crate::layout::Layout;
use libm::{exp, log1p, pow};

/// The expected rates of one class of a spatial filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassRates {
    /// Probability that an absent key is reported in this class.
    pub false_positive: f64,
    /// Probability that a key of this class is reported in a higher class.
    pub emersion: f64,
    /// Expected cells holding this class.
    pub cells: f64,
}

/// The expected rates of a class with `keys` keys in a spatial filter of `blocks` blocks of
/// `layout` whose higher classes hold `keys_above` keys in all (see the module's derivation).
pub fn spatial_class_rates(layout: Layout, blocks: u32, keys: u64, keys_above: u64) -> ClassRates {
    let at_least = false_positive_rate(layout, blocks, keys.saturating_add(keys_above));
    let above = false_positive_rate(layout, blocks, keys_above);
    let bins = f64::from(blocks.max(1)) * f64::from(layout.word_bits());
    let log_miss = log1p(-1.0 / bins);
    let hit = -libm::expm1(keys as f64 * log_miss);
    ClassRates {
        false_positive: (at_least - above).max(0.0),
        emersion: above,
        cells: bins * layout.lanes() as f64 * hit * exp(keys_above as f64 * log_miss),
    }
}

/// The classic (unblocked) spatial Bloom filter rates of a class with `keys` keys below
/// `keys_above` keys of higher classes in `cells` cells with `k` hashes per key: false positives
/// `(1 − p^{kN≥c})^k − (1 − p^{kN>c})^k` and emersion `(1 − p^{kN>c})^k` with `p = 1 − 1/m`.
/// For comparison: a blocked filter's rates are higher ([`spatial_class_rates`]).
pub fn spatial_class_rates_unblocked(cells: u64, k: u32, keys: u64, keys_above: u64) -> ClassRates {
    let (m, kf) = (cells.max(1) as f64, f64::from(k));
    let log_p = log1p(-1.0 / m);
    let set = |n: u64| pow(-libm::expm1(kf * n as f64 * log_p), kf);
    let above = set(keys_above);
    ClassRates {
        false_positive: (set(keys.saturating_add(keys_above)) - above).max(0.0),
        emersion: above,
        cells: m * -libm::expm1(kf * keys as f64 * log_p) * exp(kf * keys_above as f64 * log_p),
    }
}
