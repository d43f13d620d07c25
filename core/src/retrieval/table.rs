//! The owned retrieval table (behind `alloc`): build, look up, and the file form.

use alloc::vec::Vec;

use crate::format::{self, FormatError};
use crate::key::Key;
use crate::kind::FilterKind;
use crate::kind_meta::META_LEN;
use crate::params::Params;
use crate::stats::Stats;
use crate::write_file::{FileParts, WriteFile};

use super::build::{self, Input, Passes, Scalar};
use super::meta::HEADER_LAYOUT;
use super::shape::{self, Shape, MAX_CHECK_BITS, MAX_VALUE_BITS};
use super::{RetrievalError, RetrievalSpec};

/// A static map from each key of a build set to a `v`-bit value, with `f` check bits that
/// answer "absent" for all but a `2^−f` fraction of the other keys (see [`crate::retrieval`]).
#[derive(Clone, PartialEq, Eq)]
pub struct RetrievalTable {
    info: RetrievalInfo,
    words: Vec<u64>,
}

/// What a retrieval table is apart from its cells: the key hash and kind, where the cells are,
/// how many keys it holds. Every copy of a table carries it beside its cells (the GPU crate's
/// device copy too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetrievalInfo {
    params: Params,
    shape: Shape,
    keys: u64,
}

impl RetrievalInfo {
    /// The parameters: the key hash, and kind [`FilterKind::Retrieval`].
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Where the cells are: arity, segments, construction seed, widths.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Keys stored (distinct hashes).
    pub fn key_count(&self) -> u64 {
        self.keys
    }
}

impl core::fmt::Debug for RetrievalTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RetrievalTable")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl RetrievalTable {
    /// Builds the table mapping key hash `hashes[i]` to `values[i]`. `base` gives the key hash
    /// (seed, hash id, key type) the hashes were made with; its layout, block count and kind
    /// are replaced by the table's. The same hash twice with one value is stored once.
    ///
    /// # Errors
    /// Lengths that differ, widths out of range, a value wider than `v` bits, a hash repeated
    /// with two values (naming the later index), more keys than 32-bit cell indices reach.
    pub fn build(
        base: Params,
        spec: RetrievalSpec,
        hashes: &[u64],
        values: &[u32],
    ) -> Result<RetrievalTable, RetrievalError> {
        RetrievalTable::build_with(base, spec, hashes, values, &Scalar)
    }

    /// [`RetrievalTable::build`] with a backend's [`Passes`] (e.g. the SIMD crate's parallel,
    /// prefetching passes); every backend's passes build the same table.
    pub fn build_with(
        base: Params,
        spec: RetrievalSpec,
        hashes: &[u64],
        values: &[u32],
        passes: &impl Passes,
    ) -> Result<RetrievalTable, RetrievalError> {
        spec.check()?;
        if hashes.len() != values.len() {
            return Err(RetrievalError::LengthMismatch {
                hashes: hashes.len(),
                values: values.len(),
            });
        }
        let mask = ((1u64 << spec.value_bits) - 1) as u32;
        if let Some(index) = values.iter().position(|&v| v & !mask != 0) {
            return Err(RetrievalError::ValueTooWide {
                index,
                value: values[index],
                value_bits: spec.value_bits,
            });
        }
        let input = Input { hashes, values };
        let (shape, words, keys) =
            build::build(input, spec.value_bits, spec.check_bits, spec.arity, passes)?;
        Ok(RetrievalTable::from_shape(base, shape, words, keys))
    }

    /// Builds the table mapping `keys[i]` (hashed with `base`'s seed) to `values[i]`; see
    /// [`RetrievalTable::build`]. The key type is recorded.
    pub fn build_keys<K: Key>(
        base: Params,
        spec: RetrievalSpec,
        keys: &[K],
        values: &[u32],
    ) -> Result<RetrievalTable, RetrievalError> {
        let hashes: Vec<u64> = keys.iter().map(|k| base.hash_key(k)).collect();
        RetrievalTable::build(base.with_key_type(K::TYPE), spec, &hashes, values)
    }

    fn from_shape(base: Params, shape: Shape, words: Vec<u64>, keys: u64) -> RetrievalTable {
        let params = Params {
            layout: HEADER_LAYOUT,
            blocks: shape.lines() as u32,
            kind: shape.kind(),
            ..base
        };
        RetrievalTable {
            info: RetrievalInfo {
                params,
                shape,
                keys,
            },
            words,
        }
    }

    /// The table apart from its cells: parameters, shape and key count.
    pub fn info(&self) -> &RetrievalInfo {
        &self.info
    }

    /// The parameters: the key hash, and kind [`FilterKind::Retrieval`].
    pub fn params(&self) -> &Params {
        self.info.params()
    }

    /// Where the cells are: arity, segments, construction seed, widths.
    pub fn shape(&self) -> &Shape {
        self.info.shape()
    }

    /// Keys stored (distinct hashes).
    pub fn key_count(&self) -> u64 {
        self.info.key_count()
    }

    /// The packed cells as little-endian words, with one zero word at the end
    /// ([`Shape::words`]).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The value of the key with hash `hash`: exact for every key of the build set; for any
    /// other key `None` (absent) with probability `1 − 2^−f`, else an arbitrary value.
    #[inline]
    pub fn get_hash(&self, hash: u64) -> Option<u32> {
        shape::lookup(&self.info.shape, &self.words, hash)
    }

    /// The value of `key`; see [`RetrievalTable::get_hash`].
    pub fn get<K: Key + ?Sized>(&self, key: &K) -> Option<u32> {
        self.get_hash(self.info.params.hash_key(key))
    }

    /// [`RetrievalTable::get_hash`] of every hash: `values[i]` is the value of hash `i` (0 when
    /// absent) and bit `i % 64` of `found[i / 64]` whether it passed the check bits (bits past
    /// the last hash cleared). The reference of the bulk backends.
    ///
    /// # Panics
    /// If `values.len() != hashes.len()` or `found.len() != hashes.len().div_ceil(64)`.
    pub fn get_hashes(&self, hashes: &[u64], values: &mut [u32], found: &mut [u64]) {
        check_outputs(hashes.len(), values.len(), found.len());
        found.fill(0);
        for (i, &h) in hashes.iter().enumerate() {
            let answer = self.get_hash(h);
            values[i] = answer.unwrap_or(0);
            found[i / 64] |= u64::from(answer.is_some()) << (i % 64);
        }
    }

    /// Whether the key with `hash` passes the check bits (always with 0 check bits).
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.get_hash(hash).is_some()
    }

    /// Bits per key of the packed cells: `cells × (v + f) / keys`.
    pub fn bits_per_key(&self) -> Option<f64> {
        (self.info.keys > 0).then(|| {
            (self.info.shape.cells() * u64::from(self.info.shape.cell_bits())) as f64
                / self.info.keys as f64
        })
    }

    /// The statistics: the packed array's size, its set bits, and as the false-positive rate
    /// the chance `2^−f` that an absent key passes the check bits.
    pub fn stats(&self) -> Stats {
        let ones = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
        let mut s = Stats::new(self.info.params, Some(self.info.keys), ones);
        // The table holds its keys exactly: no estimate from the bits.
        s.set_distinct(None, None);
        s.expected_fpr = libm::exp2(-f64::from(self.info.shape.check_bits));
        s.bits_per_key = self.bits_per_key();
        s.parquet_compatible = false;
        s
    }

    /// The whole file: header, metadata, the packed cells padded to 64 bytes.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        self.file_parts().to_bytes()
    }

    /// Reads a whole retrieval file; any fault is an error (bits past the last cell must be
    /// zero, the key count must be recorded and at most the cell count).
    pub fn from_file_bytes(file: &[u8]) -> Result<RetrievalTable, FormatError> {
        let (header, payload) = format::parse(file)?;
        let p = header.params;
        if !matches!(p.kind, FilterKind::Retrieval { .. }) {
            return Err(FormatError::WrongKind {
                expected: "retrieval",
                found: p.kind.name(),
            });
        }
        let shape = Shape::decode(&payload[..META_LEN])?;
        shape.check_header(&p)?;
        let keys = header.keys.ok_or(FormatError::Metadata {
            what: "a retrieval file records its key count (flag bit 0)",
        })?;
        if keys > shape.cells() {
            return Err(FormatError::Metadata {
                what: "retrieval key count exceeds the cell count",
            });
        }
        let array = &payload[META_LEN..META_LEN + shape.array_bytes() as usize];
        let used_bits = shape.cells() * u64::from(shape.cell_bits());
        if let (Some(&last), rest @ 1..=7) = (array.last(), used_bits % 8) {
            if last >> rest != 0 {
                return Err(FormatError::Padding {
                    offset: (META_LEN + array.len() - 1) as u64,
                });
            }
        }
        let mut words = alloc::vec![0u64; shape.words() as usize];
        for (w, b) in words.iter_mut().zip(array.chunks(8)) {
            let mut a = [0u8; 8];
            a[..b.len()].copy_from_slice(b);
            *w = u64::from_le_bytes(a);
        }
        Ok(RetrievalTable {
            info: RetrievalInfo {
                params: p,
                shape,
                keys,
            },
            words,
        })
    }
}

/// Checks the output lengths of a bulk lookup of `keys` keys: one value per key, one found word
/// per 64 keys.
///
/// # Panics
/// If they differ.
pub fn check_outputs(keys: usize, values: usize, found: usize) {
    assert_eq!(values, keys, "one value per key");
    assert_eq!(found, keys.div_ceil(64), "one found word per 64 keys");
}

impl RetrievalSpec {
    /// `value_bits` of value and `check_bits` of check per key, [`shape::DEFAULT_ARITY`] cells
    /// per key.
    pub const fn new(value_bits: u8, check_bits: u8) -> RetrievalSpec {
        RetrievalSpec {
            value_bits,
            check_bits,
            arity: shape::DEFAULT_ARITY,
        }
    }

    /// The same widths with `arity` cells per key (3 or 4).
    #[must_use]
    pub const fn with_arity(mut self, arity: u8) -> RetrievalSpec {
        self.arity = arity;
        self
    }

    fn check(&self) -> Result<(), RetrievalError> {
        if !(1..=MAX_VALUE_BITS).contains(&self.value_bits)
            || self.check_bits > MAX_CHECK_BITS
            || !(3..=4).contains(&self.arity)
        {
            return Err(RetrievalError::BadSpec(*self));
        }
        Ok(())
    }
}

impl WriteFile for RetrievalTable {
    /// The shape's metadata and the packed cells (`docs/FORMAT.md`, retrieval kind).
    fn file_parts(&self) -> FileParts<'_> {
        FileParts::packed(
            self.info.params,
            Some(self.info.keys),
            self.info.shape.encode().to_vec(),
            &self.words,
            self.info.shape.array_bytes(),
        )
    }
}
