//! What can be said about a filter from its parameters, its key count and its set bits: the one
//! set of formulas that every crate (the CLI's `stats`, the GPU, the Python package) reports.
//!
//! **The bits are the distinct-key counter.** A file records the inserts its writer made
//! (repeats included: a log that names a key three times records three), which says nothing
//! about how full the filter is. What the filter's answers depend on is its bits, so every
//! figure here rests on them: the distinct keys are estimated from the set bits
//! ([`math::estimate_keys`], with its standard error), and the expected false-positive rate is
//! that of the actual bits ([`FilterRef::fpr_from_bits`](crate::FilterRef::fpr_from_bits)) where
//! the words are at hand. A HyperLogLog sketch stored beside the filter would count distinct
//! keys too, but the bits are the better counter here: they are exact under every operation
//! the filter supports (the OR of a union or merge, the fold to fewer blocks, the deletions of a
//! counting filter are all already in the bits, while a sketch would need its own merge rule and
//! could not follow a deletion); every backend (scalar, SIMD, GPU, Verilog) produces them
//! bit-identically, so no backend has to maintain a second structure; and they need no change
//! to the file format, so every file already written reports truthfully.

use crate::math;
use crate::params::Params;

/// A filter's statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// The filter's parameters.
    pub params: Params,
    /// Inserts recorded by the writer (repeated keys counted each time), when known.
    pub recorded_keys: Option<u64>,
    /// Size of the bit array in bytes.
    pub bytes: u64,
    /// Set bits.
    pub ones: u64,
    /// Fraction of bits set.
    pub fill_ratio: f64,
    /// Distinct keys estimated from the set bits (`None` when every bit is set).
    pub estimated_keys: Option<f64>,
    /// Standard error of [`Stats::estimated_keys`], in keys (an upper bound, see
    /// [`math::estimate_keys_standard_error`]).
    pub estimated_keys_error: Option<f64>,
    /// The key count the rates below use: the distinct keys estimated from the bits, rounded
    /// (the recorded count when every bit is set and the bits cannot tell).
    pub keys: Option<u64>,
    /// Expected false-positive rate: that of the filter's bits ([`Stats::fpr_from_bits`]) when
    /// computed, else the model's rate with [`Stats::keys`] keys (1 when unknown).
    pub expected_fpr: f64,
    /// Bits of filter per distinct key (`None` without keys).
    pub bits_per_key: Option<f64>,
    /// Whether the Parquet split-block form can express the filter.
    pub parquet_compatible: bool,
    /// Counters stuck at their maximum (counting and stable filters).
    pub saturated: Option<u64>,
    /// The false-positive rate of the filter's actual bits (see
    /// [`FilterRef::fpr_from_bits`](crate::FilterRef::fpr_from_bits)), when computed.
    pub fpr_from_bits: Option<f64>,
}

impl Stats {
    /// The statistics of a filter with `params`, `recorded_keys` inserts and `ones` set bits;
    /// the rate is the model's for the distinct keys the bits show until
    /// [`Stats::with_fpr_from_bits`] gives the bits' own.
    pub fn new(params: Params, recorded_keys: Option<u64>, ones: u64) -> Stats {
        let bytes = params.byte_len();
        let fill_ratio = ones as f64 / (bytes as f64 * 8.0);
        let estimated_keys = math::estimate_keys(params.layout, params.blocks, ones);
        let mut s = Stats {
            params,
            recorded_keys,
            bytes,
            ones,
            fill_ratio,
            estimated_keys: None,
            estimated_keys_error: None,
            keys: None,
            expected_fpr: 1.0,
            bits_per_key: None,
            parquet_compatible: params.parquet_compatible(),
            saturated: None,
            fpr_from_bits: None,
        };
        let error = estimated_keys
            .map(|n| math::estimate_keys_standard_error(params.layout, params.blocks, n));
        s.set_distinct(estimated_keys, error);
        s.expected_fpr = match (estimated_keys, s.keys) {
            (Some(_), Some(n)) => params.expected_fpr(n),
            _ => 1.0,
        };
        s
    }

    /// Sets the distinct-key estimate (and its standard error), and the key count and bits per
    /// key that follow from it (the recorded count when there is no estimate).
    pub fn set_distinct(&mut self, estimate: Option<f64>, error: Option<f64>) {
        self.estimated_keys = estimate;
        self.estimated_keys_error = error;
        self.keys = estimate
            .map(|e| libm::round(e) as u64)
            .or(self.recorded_keys);
        self.bits_per_key = self
            .keys
            .filter(|&n| n > 0)
            .map(|n| self.bytes as f64 * 8.0 / n as f64);
    }

    /// The distinct keys of parts that hold keys side by side (the generations of a window, the
    /// stages of a scalable filter), from each part's estimate and standard error: the sum
    /// (`None` when a part's bits are all set), with the parts' errors added in quadrature.
    pub fn sum_distinct(
        parts: impl IntoIterator<Item = (Option<f64>, Option<f64>)>,
    ) -> (Option<f64>, Option<f64>) {
        let (mut sum, mut var) = (Some(0.0), Some(0.0));
        for (estimate, error) in parts {
            sum = sum.zip(estimate).map(|(s, e)| s + e);
            var = var.zip(error).map(|(v, e)| v + e * e);
        }
        (sum, var.map(libm::sqrt))
    }

    /// The rate of a lookup that answers "may be present" when any of several parts does (a
    /// window's generations, a scalable filter's stages), from the parts' rates: `1 − Π (1 − p)`.
    /// Parts probed at related places (a window's generations share the block and bits) are
    /// positively associated, for which this is an upper bound.
    pub fn any_of(rates: impl IntoIterator<Item = f64>) -> f64 {
        (1.0 - rates.into_iter().map(|p| 1.0 - p).product::<f64>()).clamp(0.0, 1.0)
    }

    /// These statistics with `fpr`, the false-positive rate of the filter's actual bits, as the
    /// expected rate.
    #[must_use]
    pub fn with_fpr_from_bits(mut self, fpr: f64) -> Stats {
        self.fpr_from_bits = Some(fpr);
        self.expected_fpr = fpr;
        self
    }
}
