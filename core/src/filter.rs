//! An owning filter (behind the `alloc` feature): cache-line aligned storage, the file format,
//! the Parquet form and set operations, all on top of the reference path.

use alloc::vec::Vec;

use crate::fold;
use crate::format::{self, FormatError, Header};
use crate::key::Key;
use crate::kind::FilterKind;
use crate::layout::Layout;
use crate::math;
use crate::params::{MergeError, Params, Sizing};
use crate::parquet::{self, ParquetError};
use crate::reference::{FilterMut, FilterRef};
use crate::stats::Stats;
use crate::storage::Words;
use crate::write_file::{FileParts, WriteFile};
use crate::HashId;

impl WriteFile for Filter {
    fn file_parts(&self) -> FileParts<'_> {
        FileParts::new(
            self.params,
            self.keys,
            Vec::new(),
            alloc::vec![self.words()],
        )
    }
}

/// A filter that owns its bits, with its [`Params`] and its key count.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    params: Params,
    keys: Option<u64>,
    words: Words,
}

impl Filter {
    /// An empty filter with these parameters (a block count of 0 is taken as 1).
    ///
    /// # Panics
    /// If the bit array does not fit the address space (`usize`).
    pub fn new(params: Params) -> Filter {
        let params = Params {
            blocks: params.blocks.max(1),
            ..params
        };
        Filter {
            params,
            keys: Some(0),
            words: Words::zeroed(params.u32_len()),
        }
    }

    /// [`Filter::new`], or `None` when the bit array cannot be allocated (instead of aborting
    /// the process): for callers that must turn a refused allocation into an error.
    pub fn try_new(params: Params) -> Option<Filter> {
        let params = Params {
            blocks: params.blocks.max(1),
            ..params
        };
        Some(Filter {
            params,
            keys: Some(0),
            words: Words::try_zeroed(params.u32_len())?,
        })
    }

    /// An empty filter for `keys` keys sized by `sizing` (see [`Params::for_keys`]), XXH64 with
    /// `seed`.
    pub fn for_keys(
        keys: u64,
        sizing: Sizing,
        layout: Option<Layout>,
        seed: u64,
    ) -> Result<Filter, math::SizingError> {
        Ok(Filter::new(
            Params::for_keys(keys, sizing, layout)?.with_seed(seed),
        ))
    }

    crate::params_accessors!();
    /// The key hash function.
    pub fn hash_id(&self) -> HashId {
        self.params.hash
    }
    /// Number of insert calls since the filter was empty, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Records the number of keys (e.g. after a bulk insert by another backend), or forgets it.
    pub fn set_key_count(&mut self, keys: Option<u64>) {
        self.keys = keys;
    }
    /// Adds `n` to the key count, if it is known.
    pub fn add_key_count(&mut self, n: u64) {
        self.keys = self.keys.map(|k| k.saturating_add(n));
    }
    /// Records what the keys are (a streamed build learns it from its inputs as it reads
    /// them); the bits are not changed.
    pub fn set_key_type(&mut self, key_type: crate::KeyType) {
        self.params.key_type = key_type;
    }
    /// Size of the bit array in bytes.
    pub fn byte_len(&self) -> usize {
        self.params.byte_len() as usize
    }

    /// The header that describes this filter.
    pub fn header(&self) -> Header {
        Header::new(self.params, self.keys)
    }

    /// The bits as 32-bit words of the byte image (little-endian words), 64-byte aligned.
    pub fn words(&self) -> &[u32] {
        self.words.as_slice()
    }

    /// Mutable words. Writing through this does not update the key count.
    pub fn words_mut(&mut self) -> &mut [u32] {
        self.words.as_mut_slice()
    }

    /// A borrowed view (parameters and words), for the bulk backends.
    pub fn as_view(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.params, self.words()).expect("a Filter always has whole blocks")
    }

    /// A mutable borrowed view, for the bulk backends (the key count is not updated; see
    /// [`Filter::add_key_count`]).
    pub fn as_view_mut(&mut self) -> FilterMut<'_, u32> {
        let params = self.params;
        FilterMut::new(params, self.words_mut()).expect("a Filter always has whole blocks")
    }

    /// Sets the bits of a caller-hashed key.
    pub fn insert_hash(&mut self, hash: u64) {
        self.as_view_mut().insert_hash(hash);
        self.add_key_count(1);
    }
    /// Inserts a key: a string, byte string or number (see [`Key`]).
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params.hash_key(key));
    }
    /// Whether a caller-hashed key may be present.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.as_view().contains_hash(hash)
    }
    /// Whether a key may be present.
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash_key(key))
    }

    /// Clears every bit.
    pub fn clear(&mut self) {
        self.words.fill_zero();
        self.keys = Some(0);
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.as_view().count_ones()
    }
    /// The filter's statistics (fill ratio, estimated keys, expected false-positive rate …).
    pub fn stats(&self) -> Stats {
        let view = self.as_view();
        Stats::new(self.params, self.keys, view.count_ones()).with_fpr_from_bits(view.fpr_from_bits())
    }
    /// Fraction of bits set.
    pub fn fill_ratio(&self) -> f64 {
        self.stats().fill_ratio
    }
    /// Distinct keys estimated from the set bits (`None` if saturated).
    pub fn estimated_keys(&self) -> Option<f64> {
        self.stats().estimated_keys
    }
    /// Expected false-positive rate with `keys` keys (the recorded count if `None`, else the
    /// estimate).
    pub fn expected_fpr(&self, keys: Option<u64>) -> f64 {
        match keys {
            Some(n) => self.params.expected_fpr(n),
            None => self.stats().expected_fpr,
        }
    }

    /// ORs `other` into `self`: the filter of the union of both key sets. The key count
    /// becomes the sum of both ([`fold::merged_key_count`]: unknown if either is), the count a
    /// one-shot build of both inputs records.
    pub fn union_with(&mut self, other: &Filter) -> Result<(), MergeError> {
        self.params.check_compatible(&other.params)?;
        for (x, y) in self.words_mut().iter_mut().zip(other.words()) {
            *x |= y;
        }
        self.params.key_type = self.params.merged_key_type(&other.params);
        self.keys = fold::merged_key_count(self.keys, other.keys);
        Ok(())
    }

    /// This filter folded into `blocks` blocks, which must divide its block count: byte for
    /// byte the filter of the same keys built at `blocks` blocks (see [`crate::fold`]), with
    /// the same key count.
    pub fn folded(&self, blocks: u32) -> Result<Filter, MergeError> {
        let mut out = fold::fold_view(self.as_view(), blocks)?;
        out.keys = self.keys;
        Ok(out)
    }

    /// The union of filters whose block counts divide one another: each is folded to the
    /// smallest block count ([`Filter::folded`]), then ORed ([`Filter::union_with`]).
    pub fn union_folding(&self, other: &Filter) -> Result<Filter, MergeError> {
        fold::union_folding(self, other)
    }

    /// ANDs `other` into `self`: answers "maybe" only where both filters do, so it contains
    /// every key of the intersection (with a higher false-positive rate than a filter built from
    /// the intersection alone).
    pub fn intersect_with(&mut self, other: &Filter) -> Result<(), MergeError> {
        self.params.check_compatible(&other.params)?;
        for (x, y) in self.words_mut().iter_mut().zip(other.words()) {
            *x &= y;
        }
        self.keys = None;
        Ok(())
    }

    /// Estimated sizes of the union and intersection of the key sets of two compatible filters.
    pub fn estimate_union_intersection(&self, other: &Filter) -> Result<(f64, f64), MergeError> {
        let mut union = self.clone();
        union.union_with(other)?;
        let est = |f: &Filter| f.estimated_keys().unwrap_or(f64::INFINITY);
        let u = est(&union);
        Ok((u, math::estimate_intersection(est(self), est(other), u)))
    }

    /// The byte image: words little-endian, block after block.
    pub fn to_image(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.byte_len());
        for w in self.words() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Appends the byte image to `out` (what [`Filter::to_image`] returns, without a copy).
    pub fn write_image(&self, out: &mut Vec<u8>) {
        self.words.write_le(out, false)
    }

    /// A filter from a byte image; its length must be a whole, non-zero number of blocks.
    pub fn from_image(image: &[u8], header: Header) -> Result<Filter, FormatError> {
        let expected = header.payload_len();
        if image.len() as u64 != expected {
            return Err(FormatError::PayloadLength {
                expected,
                found: image.len() as u64,
            });
        }
        let mut f = Filter::new(header.params);
        f.keys = header.keys;
        for (w, b) in f.words_mut().iter_mut().zip(image.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(f)
    }

    /// The whole file: header, then the byte image.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        self.file_parts().to_bytes()
    }

    /// Reads a whole file; any fault (truncation, corruption, foreign or future format) is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<Filter, FormatError> {
        let (header, payload) = format::parse_kind(file, "static", |k| k == FilterKind::Static)?;
        Filter::from_image(payload, header)
    }

    /// The Parquet form (Thrift header + bitset). Only 8x32 filters with XXH64 seed 0 have one.
    pub fn to_parquet(&self) -> Result<Vec<u8>, ParquetError> {
        if !self.params.parquet_compatible() {
            return Err(ParquetError::NotParquetLayout);
        }
        let num_bytes = u32::try_from(self.byte_len())
            .map_err(|_| ParquetError::BadLength(self.byte_len() as i64))?;
        if num_bytes > i32::MAX as u32 {
            return Err(ParquetError::BadLength(i64::from(num_bytes)));
        }
        let (head, n) = parquet::encode_header(num_bytes);
        let mut out = Vec::with_capacity(n + self.byte_len());
        out.extend_from_slice(&head[..n]);
        out.extend_from_slice(&self.to_image());
        Ok(out)
    }

    /// Reads the Parquet form; returns the filter and the bytes consumed.
    pub fn from_parquet(bytes: &[u8]) -> Result<(Filter, usize), ParquetError> {
        let (bitset, used) = parquet::parse(bytes)?;
        let header = Header::new(
            Params::new(
                Layout::L8x32,
                (bitset.len() / Layout::L8x32.block_bytes()) as u32,
            ),
            None,
        );
        let filter = Filter::from_image(bitset, header)
            .map_err(|_| ParquetError::BadLength(bitset.len() as i64))?;
        Ok((filter, used))
    }
}
