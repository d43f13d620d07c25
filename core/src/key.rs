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
