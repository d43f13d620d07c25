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
