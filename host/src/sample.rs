//! Deterministic sample data for `verify` and the `bench` demo: SplitMix64 keys and a query set
//! half of which is present.

/// SplitMix64: a small, fast, deterministic generator for sample keys.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
}

impl Iterator for SplitMix64 {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Some(z ^ (z >> 31))
    }
}

/// `n` distinct-with-overwhelming-probability sample keys.
pub fn sample_keys(n: usize) -> Vec<u64> {
    SplitMix64::new(0x5eed_b100_0000_0001).take(n).collect()
}

/// A query set of `n` keys, alternating between keys of `inserted` (present) and fresh keys
/// (absent with overwhelming probability). Returns the set and how many are present.
pub fn sample_queries(inserted: &[u64], n: usize) -> (Vec<u64>, usize) {
    let mut fresh = SplitMix64::new(0xab5e_47ab_5e47_0002);
    let mut pick = SplitMix64::new(0x9e7c_0000_0000_0003);
    let mut present = 0;
    let q = (0..n)
        .map(|i| {
            if i % 2 == 0 && !inserted.is_empty() {
                present += 1;
                inserted[(pick.next().unwrap_or(0) % inserted.len() as u64) as usize]
            } else {
                fresh.next().unwrap_or(0)
            }
        })
        .collect();
    (q, present)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_deterministic_and_half_present() {
        let keys = sample_keys(1000);
        assert_eq!(keys, sample_keys(1000));
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), 1000);
        let (q, present) = sample_queries(&keys, 11);
        assert_eq!((q.len(), present), (11, 6));
        assert!(q.iter().step_by(2).all(|k| keys.contains(k)));
        assert!(q.iter().skip(1).step_by(2).all(|k| !keys.contains(k)));
    }
}
