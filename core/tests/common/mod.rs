//! Helpers the core's integration tests share: a deterministic key stream, absent keys, the 4σ
//! check of a measured rate, and the checksums of a deliberately edited file.
#![allow(dead_code)]

use bloomlanes_core::format::HEADER_LEN;
use bloomlanes_core::{xxh64, Layout};
use proptest::prelude::*;

/// Any block layout (the proptest strategy of every property over layouts).
pub fn layout() -> impl Strategy<Value = Layout> {
    prop::sample::select(Layout::ALL.to_vec())
}

/// SplitMix64: the next pseudo-random value of `state`.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Absent keys measured per rate: enough for a rate of 10⁻³ to be known within a few percent.
pub const ABSENT: u64 = 1_000_000;

/// [`ABSENT`] keys from the top half of the u64 range (the tests insert small integers).
pub fn absent_keys() -> impl Iterator<Item = u64> {
    let mut s = 0xabcd_ef01;
    (0..ABSENT).map(move |_| splitmix(&mut s) | 1 << 63)
}

/// How many of the absent keys `contains` reports.
pub fn absent_hits(contains: impl Fn(u64) -> bool) -> u64 {
    absent_keys().filter(|&k| contains(k)).count() as u64
}

/// Asserts that `hits` out of `n` trials is within 4σ of rate `p` (binomial σ).
pub fn within_4_sigma(what: &str, hits: u64, n: u64, p: f64) {
    let var = n as f64 * p * (1.0 - p);
    within_4_sigma_of(what, hits as f64, n, n as f64 * p, var);
}

/// Asserts that `measured` (out of `n`) is within 4σ of `expected`, where `var` is the variance
/// of the measurement (at least 1).
pub fn within_4_sigma_of(what: &str, measured: f64, n: u64, expected: f64, var: f64) {
    let sigma = var.sqrt().max(1.0);
    let z = (measured - expected) / sigma;
    eprintln!(
        "{what}: measured {measured}/{n} = {:.6}, expected {:.6}, z = {z:.2}",
        measured / n as f64,
        expected / n as f64
    );
    assert!(
        z.abs() <= 4.0,
        "{what}: {measured} of {n} (expected {expected:.1}, z = {z:.2})"
    );
}

/// Mean and variance of per-block values: the spread of a filter's blocks, from which the
/// filter-to-filter variation of a sum over blocks is estimated.
#[derive(Clone, Default)]
pub struct Spread {
    n: f64,
    sum: f64,
    sum_sq: f64,
}

impl Spread {
    /// Adds one block's value.
    pub fn add(&mut self, x: f64) {
        self.n += 1.0;
        self.sum += x;
        self.sum_sq += x * x;
    }

    /// The sample variance of the values.
    pub fn variance(&self) -> f64 {
        let mean = self.sum / self.n;
        ((self.sum_sq - self.n * mean * mean) / (self.n - 1.0)).max(0.0)
    }

    /// The sum of the values.
    pub fn sum(&self) -> f64 {
        self.sum
    }
}

/// Recomputes both checksums of a file after a deliberate edit, so that the check under test,
/// not a checksum, is what must reject it.
pub fn rechecksum(file: &mut [u8]) {
    let payload = xxh64(&file[HEADER_LEN..], 0);
    file[48..56].copy_from_slice(&payload.to_le_bytes());
    let header = xxh64(&file[..56], 0);
    file[56..64].copy_from_slice(&header.to_le_bytes());
}

/// `file` with `value` written at byte `at` and both checksums recomputed ([`rechecksum`]).
pub fn with(file: &[u8], at: usize, value: &[u8]) -> Vec<u8> {
    let mut f = file.to_vec();
    f[at..at + value.len()].copy_from_slice(value);
    rechecksum(&mut f);
    f
}

/// Asserts that flipping any one of every `step`-th bit of `file` makes `rejects` true.
pub fn flips_rejected(file: &[u8], step: usize, rejects: impl Fn(&[u8]) -> bool) {
    for bit in (0..file.len() * 8).step_by(step) {
        let mut bad = file.to_vec();
        bad[bit / 8] ^= 1 << (bit % 8);
        assert!(rejects(&bad), "flip of bit {bit} accepted");
    }
}
