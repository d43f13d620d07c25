//! An owning filter (behind the `alloc` feature): cache-line aligned storage, the file format,
//! the Parquet form and set operations, all on top of the reference path.

use alloc::vec;
use alloc::vec::Vec;
use bytemuck::{Pod, Zeroable};

use crate::format::{self, FormatError, HashId, Header, HEADER_LEN};
use crate::layout::Layout;
use crate::math;
use crate::parquet::{self, ParquetError};
use crate::reference::{FilterMut, FilterRef};
use crate::xxh64::{xxh64, xxh64_u64};

/// 64 bytes aligned to 64: the unit of storage, so that no block straddles a cache line.
#[derive(Clone, Copy, Pod, Zeroable)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// How to size a new filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sizing {
    /// Meet this expected false-positive rate.
    FalsePositiveRate(f64),
    /// Spend about this many bits per key.
    BitsPerKey(f64),
}

/// Why two filters cannot be combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeError {
    /// Different block shapes.
    Layout(Layout, Layout),
    /// Different block counts.
    Blocks(u32, u32),
    /// Different hash seeds.
    Seed(u64, u64),
    /// Different hash functions.
    Hash(HashId, HashId),
}

impl core::fmt::Display for MergeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MergeError::Layout(a, b) => write!(f, "incompatible filters: layout {a} vs {b}"),
            MergeError::Blocks(a, b) => write!(f, "incompatible filters: {a} blocks vs {b}"),
            MergeError::Seed(a, b) => write!(f, "incompatible filters: seed {a} vs {b}"),
            MergeError::Hash(a, b) => write!(f, "incompatible filters: hash {a:?} vs {b:?}"),
        }
    }
}

/// A filter that owns its bits.
#[derive(Clone)]
pub struct Filter {
    layout: Layout,
    blocks: u32,
    seed: u64,
    hash: HashId,
    keys: Option<u64>,
    lines: Vec<Line>,
}

impl core::fmt::Debug for Filter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Filter")
            .field("layout", &self.layout)
            .field("blocks", &self.blocks)
            .field("seed", &self.seed)
            .field("hash", &self.hash)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Filter {
    fn eq(&self, other: &Self) -> bool {
        self.header() == other.header() && self.words() == other.words()
    }
}

impl Filter {
    /// An empty filter of `blocks` blocks (at least 1), XXH64 with `seed`.
    pub fn new(layout: Layout, blocks: u32, seed: u64) -> Filter {
        Filter::with_hash(layout, blocks.max(1), seed, HashId::Xxh64)
    }

    /// An empty filter whose keys are hashed by `hash`.
    pub fn with_hash(layout: Layout, blocks: u32, seed: u64, hash: HashId) -> Filter {
        let blocks = blocks.max(1);
        let bytes = blocks as usize * layout.block_bytes();
        Filter {
            layout,
            blocks,
            seed,
            hash,
            keys: Some(0),
            lines: vec![Line([0; 16]); bytes.div_ceil(64)],
        }
    }

    /// An empty filter for `keys` keys sized by `sizing`; `layout` `None` picks the layout that
    /// meets a rate in the fewest bits (for bits per key, `None` means 8x32).
    pub fn for_keys(
        keys: u64,
        sizing: Sizing,
        layout: Option<Layout>,
        seed: u64,
    ) -> Result<Filter, math::SizingError> {
        let (layout, blocks) = match (sizing, layout) {
            (Sizing::FalsePositiveRate(r), None) => math::auto_size(keys, r)?,
            (Sizing::FalsePositiveRate(r), Some(l)) => (l, math::blocks_for_rate(l, keys, r)?),
            (Sizing::BitsPerKey(b), l) => {
                let l = l.unwrap_or(Layout::L8x32);
                (l, math::blocks_for_bits_per_key(l, keys, b)?)
            }
        };
        Ok(Filter::new(layout, blocks, seed))
    }

    /// The block shape.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Number of blocks `z`.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }
    /// Seed of the key hash.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// The key hash function.
    pub fn hash_id(&self) -> HashId {
        self.hash
    }
    /// Number of insert calls since the filter was empty, if known.
    pub fn key_count(&self) -> Option<u64> {
        self.keys
    }
    /// Records the number of keys (e.g. after a bulk insert by another backend), or forgets it.
    pub fn set_key_count(&mut self, keys: Option<u64>) {
        self.keys = keys;
    }
    /// Size of the bit array in bytes.
    pub fn byte_len(&self) -> usize {
        self.blocks as usize * self.layout.block_bytes()
    }

    /// The header that describes this filter.
    pub fn header(&self) -> Header {
        Header {
            layout: self.layout,
            blocks: self.blocks,
            seed: self.seed,
            hash: self.hash,
            keys: self.keys,
        }
    }

    /// The bits as 32-bit words of the byte image (little-endian words), 64-byte aligned.
    pub fn words(&self) -> &[u32] {
        &bytemuck::cast_slice(&self.lines)[..self.byte_len() / 4]
    }

    /// Mutable words. Writing through this does not update the key count.
    pub fn words_mut(&mut self) -> &mut [u32] {
        let n = self.byte_len() / 4;
        &mut bytemuck::cast_slice_mut(&mut self.lines)[..n]
    }

    /// A borrowed view of the words, for the bulk backends.
    pub fn as_view(&self) -> FilterRef<'_, u32> {
        self.view()
    }

    /// A mutable borrowed view of the words, for the bulk backends (the key count is not updated;
    /// see [`Filter::set_key_count`]).
    pub fn as_view_mut(&mut self) -> FilterMut<'_, u32> {
        self.view_mut()
    }

    fn view(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.layout, self.words()).expect("a Filter always has whole blocks")
    }

    fn view_mut(&mut self) -> FilterMut<'_, u32> {
        let layout = self.layout;
        FilterMut::new(layout, self.words_mut()).expect("a Filter always has whole blocks")
    }

    fn count_insert(&mut self) {
        self.keys = self.keys.map(|k| k.saturating_add(1));
    }

    /// Sets the bits of a caller-hashed key.
    pub fn insert_hash(&mut self, hash: u64) {
        self.view_mut().insert_hash(hash);
        self.count_insert();
    }
    /// Inserts a byte-string key.
    pub fn insert(&mut self, key: &[u8]) {
        self.insert_hash(xxh64(key, self.seed));
    }
    /// Inserts an integer key (its little-endian bytes).
    pub fn insert_u64(&mut self, key: u64) {
        self.insert_hash(xxh64_u64(key, self.seed));
    }
    /// Whether a caller-hashed key may be present.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.view().contains_hash(hash)
    }
    /// Whether a byte-string key may be present.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.contains_hash(xxh64(key, self.seed))
    }
    /// Whether an integer key may be present.
    pub fn contains_u64(&self, key: u64) -> bool {
        self.contains_hash(xxh64_u64(key, self.seed))
    }
    /// Hash of a byte-string key under this filter's seed.
    pub fn hash_key(&self, key: &[u8]) -> u64 {
        xxh64(key, self.seed)
    }

    /// Clears every bit.
    pub fn clear(&mut self) {
        self.lines.fill(Line([0; 16]));
        self.keys = Some(0);
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.words().iter().map(|w| u64::from(w.count_ones())).sum()
    }
    /// Fraction of bits set.
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / (self.byte_len() as f64 * 8.0)
    }
    /// Distinct keys estimated from the set bits (`None` if saturated).
    pub fn estimated_keys(&self) -> Option<f64> {
        math::estimate_keys(self.layout, self.blocks, self.count_ones())
    }
    /// Expected false-positive rate with `keys` keys (the recorded count if `None`, else the estimate).
    pub fn expected_fpr(&self, keys: Option<u64>) -> f64 {
        let n = keys
            .or(self.keys)
            .or_else(|| self.estimated_keys().map(|e| libm::round(e) as u64));
        n.map_or(1.0, |n| {
            math::false_positive_rate(self.layout, self.blocks, n)
        })
    }

    fn check_compatible(&self, other: &Filter) -> Result<(), MergeError> {
        if self.layout != other.layout {
            return Err(MergeError::Layout(self.layout, other.layout));
        }
        if self.blocks != other.blocks {
            return Err(MergeError::Blocks(self.blocks, other.blocks));
        }
        if self.hash != other.hash {
            return Err(MergeError::Hash(self.hash, other.hash));
        }
        if self.seed != other.seed {
            return Err(MergeError::Seed(self.seed, other.seed));
        }
        Ok(())
    }

    /// ORs `other` into `self`: the filter of the union of both key sets.
    pub fn union_with(&mut self, other: &Filter) -> Result<(), MergeError> {
        self.check_compatible(other)?;
        for (a, b) in self.lines.iter_mut().zip(&other.lines) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x |= y;
            }
        }
        self.keys = None;
        Ok(())
    }

    /// ANDs `other` into `self`: answers "maybe" only where both filters do, so it contains
    /// every key of the intersection (with a higher false-positive rate than a filter built from
    /// the intersection alone).
    pub fn intersect_with(&mut self, other: &Filter) -> Result<(), MergeError> {
        self.check_compatible(other)?;
        for (a, b) in self.lines.iter_mut().zip(&other.lines) {
            for (x, y) in a.0.iter_mut().zip(b.0) {
                *x &= y;
            }
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

    /// A filter from a byte image; its length must be a whole, non-zero number of blocks.
    pub fn from_image(image: &[u8], header: Header) -> Result<Filter, FormatError> {
        let expected = header.payload_len();
        if image.len() as u64 != expected {
            return Err(FormatError::PayloadLength {
                expected,
                found: image.len() as u64,
            });
        }
        let mut f = Filter::with_hash(header.layout, header.blocks, header.seed, header.hash);
        f.keys = header.keys;
        for (w, b) in f.words_mut().iter_mut().zip(image.chunks_exact(4)) {
            *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(f)
    }

    /// The whole file: header, then the byte image.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let image = self.to_image();
        let header = self.header().encode(&image);
        let mut out = Vec::with_capacity(HEADER_LEN + image.len());
        out.extend_from_slice(&header);
        out.extend_from_slice(&image);
        out
    }

    /// Reads a whole file; any fault (truncation, corruption, foreign or future format) is an error.
    pub fn from_file_bytes(file: &[u8]) -> Result<Filter, FormatError> {
        let (header, payload) = format::parse(file)?;
        Filter::from_image(payload, header)
    }

    /// The Parquet form (Thrift header + bitset). Only 8x32 filters with XXH64 seed 0 have one.
    pub fn to_parquet(&self) -> Result<Vec<u8>, ParquetError> {
        if self.layout != Layout::L8x32 || self.seed != 0 || self.hash != HashId::Xxh64 {
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
        let header = Header {
            layout: Layout::L8x32,
            blocks: (bitset.len() / Layout::L8x32.block_bytes()) as u32,
            seed: 0,
            hash: HashId::Xxh64,
            keys: None,
        };
        let filter = Filter::from_image(bitset, header)
            .map_err(|_| ParquetError::BadLength(bitset.len() as i64))?;
        Ok((filter, used))
    }
}
