//! What a key is: any value with a byte form, hashed with XXH64 (in the spirit of arrow's
//! `AsBytes`), so that one `insert`/`contains` takes strings, byte strings and numbers alike.
//!
//! Numbers are hashed as the bytes of their Parquet plain encoding (little-endian, fixed width):
//! an `i64` or `u64` as 8 bytes, an `i32` or `u32` as 4, an `f64` as the 8 bytes of its IEEE 754
//! bits, so that a filter interoperates with Parquet writers for columns of that type.

use crate::key_type::KeyType;
use crate::xxh64::{xxh64, xxh64_u64};

/// A value that can be looked up in or inserted into a filter.
pub trait Key {
    /// The key type these values are (checked against a filter's recorded key type).
    const TYPE: KeyType;
    /// The 64-bit hash of this key under `seed`: XXH64 of its byte form.
    fn key_hash(&self, seed: u64) -> u64;
}

impl Key for [u8] {
    const TYPE: KeyType = KeyType::Bytes;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(self, seed)
    }
}

impl<const N: usize> Key for [u8; N] {
    const TYPE: KeyType = KeyType::Bytes;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(self, seed)
    }
}

impl Key for str {
    const TYPE: KeyType = KeyType::Bytes;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(self.as_bytes(), seed)
    }
}

#[cfg(feature = "alloc")]
impl Key for alloc::vec::Vec<u8> {
    const TYPE: KeyType = KeyType::Bytes;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(self, seed)
    }
}

#[cfg(feature = "alloc")]
impl Key for alloc::string::String {
    const TYPE: KeyType = KeyType::Bytes;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(self.as_bytes(), seed)
    }
}

impl<K: Key + ?Sized> Key for &K {
    const TYPE: KeyType = K::TYPE;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        (**self).key_hash(seed)
    }
}

impl Key for u64 {
    const TYPE: KeyType = KeyType::U64;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64_u64(*self, seed)
    }
}

impl Key for i64 {
    const TYPE: KeyType = KeyType::I64;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64_u64(*self as u64, seed)
    }
}

impl Key for u32 {
    const TYPE: KeyType = KeyType::U32;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(&self.to_le_bytes(), seed)
    }
}

impl Key for i32 {
    const TYPE: KeyType = KeyType::I32;
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(&self.to_le_bytes(), seed)
    }
}

impl Key for f32 {
    const TYPE: KeyType = KeyType::F32;
    /// The 4 little-endian bytes of the IEEE 754 bits, as every Parquet writer hashes a `FLOAT`
    /// (no normalization: `-0.0` and `0.0` differ, as do NaN payloads; see
    /// [`float_probes`] for lookups that treat them as SQL does).
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64(&self.to_bits().to_le_bytes(), seed)
    }
}

impl Key for f64 {
    const TYPE: KeyType = KeyType::F64;
    /// The 8 little-endian bytes of the IEEE 754 bits, as every Parquet writer hashes a `DOUBLE`
    /// (no normalization; see [`float_probes`]).
    #[inline]
    fn key_hash(&self, seed: u64) -> u64 {
        xxh64_u64(self.to_bits(), seed)
    }
}

/// How a float lookup is answered, given that writers hash the raw bits: a query for `0.0` or
/// `-0.0` must find either (SQL compares them equal, and a writer's dictionary keeps whichever
/// came first), and a query for NaN can never be ruled out (NaN payloads differ between writers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatProbe {
    /// Probe these raw bits only.
    Bits(u64),
    /// Probe both zeros (the bits of `+0.0` and `-0.0`); present if either is.
    BothZeros(u64, u64),
    /// Answer "may be present" without probing.
    AlwaysMaybe,
}

/// The probe rule for an `f64` query (see [`FloatProbe`]); apply it to `f32` queries with
/// [`float_probes_f32`].
pub fn float_probes(x: f64) -> FloatProbe {
    if x.is_nan() {
        FloatProbe::AlwaysMaybe
    } else if x == 0.0 {
        FloatProbe::BothZeros(0.0f64.to_bits(), (-0.0f64).to_bits())
    } else {
        FloatProbe::Bits(x.to_bits())
    }
}

/// The probe rule for an `f32` query; the bits are the `f32` bits widened to `u64`.
pub fn float_probes_f32(x: f32) -> FloatProbe {
    if x.is_nan() {
        FloatProbe::AlwaysMaybe
    } else if x == 0.0 {
        FloatProbe::BothZeros(u64::from(0.0f32.to_bits()), u64::from((-0.0f32).to_bits()))
    } else {
        FloatProbe::Bits(u64::from(x.to_bits()))
    }
}

/// The float lookup rule ([`float_probes`]) applied to a batch of answers for a filter of float
/// or double keys: made once per filter (it asks the filter about both zeros once), then applied
/// to each batch's answers by every lookup path (scalar, SIMD, GPU, streamed, Python).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatRule {
    /// The keys are doubles (else floats).
    double: bool,
    /// The filter may hold `0.0` or `-0.0`.
    zero: bool,
}

impl FloatRule {
    /// The rule for a filter of keys of type `key_type` hashed under `seed`, whose lookup of a
    /// hash is `has`; `None` when its keys are not floats (answers stand as probed).
    pub fn new(key_type: KeyType, seed: u64, has: impl Fn(u64) -> bool) -> Option<FloatRule> {
        let double = match key_type.physical() {
            crate::Physical::Double => true,
            crate::Physical::Float => false,
            _ => return None,
        };
        let zero = if double {
            has(0.0f64.key_hash(seed)) || has((-0.0f64).key_hash(seed))
        } else {
            has(0.0f32.key_hash(seed)) || has((-0.0f32).key_hash(seed))
        };
        Some(FloatRule { double, zero })
    }

    /// Applies the rule to the answers `words` of `n` keys (bit `i % 64` of word `i / 64`):
    /// key `i` whose bits `bits_of(i)` gives (a double's, or a float's widened to `u64`) may be
    /// present if it is a zero and either zero is, or if it is NaN; other keys, and keys whose
    /// bits are `None`, keep their answers.
    pub fn apply(&self, n: usize, words: &mut [u64], bits_of: impl Fn(usize) -> Option<u64>) {
        for i in 0..n {
            let Some(bits) = bits_of(i) else { continue };
            let probe = if self.double {
                float_probes(f64::from_bits(bits))
            } else {
                float_probes_f32(f32::from_bits(bits as u32))
            };
            let answer = match probe {
                FloatProbe::Bits(_) => continue,
                FloatProbe::AlwaysMaybe => true,
                FloatProbe::BothZeros(..) => self.zero,
            };
            let bit = 1u64 << (i % 64);
            if answer {
                words[i / 64] |= bit;
            } else {
                words[i / 64] &= !bit;
            }
        }
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::{Filter, Layout, Params};

    #[test]
    fn the_float_rule_finds_either_zero_and_never_rules_out_nan() {
        let p = Params::new(Layout::L8x32, 4).with_seed(9);
        let mut f = Filter::new(p.with_key_type(KeyType::F64));
        f.insert(&-0.0f64);
        let rule = FloatRule::new(KeyType::F64, 9, |h| f.contains_hash(h)).unwrap();
        let keys = [0.0f64, f64::NAN, 2.5, -0.0];
        let mut words = [0b1000u64 | 0b0100]; // as probed: 2.5 a false positive, -0.0 found
        rule.apply(4, &mut words, |i| Some(keys[i].to_bits()));
        assert_eq!(words[0], 0b1111);
        let empty = Filter::new(p.with_key_type(KeyType::F32));
        let rule = FloatRule::new(KeyType::F32, 9, |h| empty.contains_hash(h)).unwrap();
        let mut words = [0b11u64];
        let bits = [u64::from(0.0f32.to_bits()), u64::from(1.0f32.to_bits())];
        rule.apply(2, &mut words, |i| Some(bits[i]));
        assert_eq!(words[0], 0b10, "no zero in the filter: 0.0 answered absent");
        assert!(FloatRule::new(KeyType::I64, 9, |_| true).is_none());
    }
}
