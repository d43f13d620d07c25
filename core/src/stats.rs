//! What can be said about a filter from its parameters, its key count and its set bits: the one
//! set of formulas that every crate (the CLI's `stats`, the GPU, the Python package) reports.

use crate::math;
use crate::params::Params;

/// A filter's statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// The filter's parameters.
    pub params: Params,
    /// Keys inserted as recorded by the writer, when known.
    pub recorded_keys: Option<u64>,
    /// Size of the bit array in bytes.
    pub bytes: u64,
    /// Set bits.
    pub ones: u64,
    /// Fraction of bits set.
    pub fill_ratio: f64,
    /// Distinct keys estimated from the set bits (`None` when every bit is set).
    pub estimated_keys: Option<f64>,
    /// The key count the rates below use: the recorded count, else the rounded estimate.
    pub keys: Option<u64>,
    /// Expected false-positive rate with [`Stats::keys`] keys (1 when unknown).
    pub expected_fpr: f64,
    /// Bits of filter per key (`None` without keys).
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
    /// The statistics of a filter with `params`, `recorded_keys` and `ones` set bits.
    pub fn new(params: Params, recorded_keys: Option<u64>, ones: u64) -> Stats {
        let bytes = params.byte_len();
        let fill_ratio = ones as f64 / (bytes as f64 * 8.0);
        let estimated_keys = math::estimate_keys(params.layout, params.blocks, ones);
        let keys = recorded_keys.or_else(|| estimated_keys.map(|e| libm::round(e) as u64));
        Stats {
            params,
            recorded_keys,
            bytes,
            ones,
            fill_ratio,
            estimated_keys,
            keys,
            expected_fpr: keys.map_or(1.0, |n| params.expected_fpr(n)),
            bits_per_key: keys
                .filter(|&n| n > 0)
                .map(|n| math::bits_per_key(params.layout, params.blocks, n)),
            parquet_compatible: params.parquet_compatible(),
            saturated: None,
            fpr_from_bits: None,
        }
    }
}
