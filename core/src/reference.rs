//! The scalar reference path over borrowed words: no allocator, no unsafe. Every other backend
//! is tested against this module.

use crate::layout::{block_index, lane_bit, Layout, MAX_BLOCKS};
use crate::xxh64::{xxh64, xxh64_u64};

/// A storage word of the byte image, read little-endian: `u32` or `u64`.
/// Bit `j` of the image's word `i` is bit `j` of storage word `i` (as a number), whatever the
/// host's endianness.
pub trait Word: Copy + Eq + core::fmt::Debug {
    /// Width in bits.
    const BITS: u32;
    /// Whether bit `bit` is set.
    fn bit(self, bit: u32) -> bool;
    /// This word with bit `bit` set.
    fn with_bit(self, bit: u32) -> Self;
}

impl Word for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn bit(self, bit: u32) -> bool {
        self >> bit & 1 == 1
    }
    #[inline(always)]
    fn with_bit(self, bit: u32) -> Self {
        self | 1 << bit
    }
}

impl Word for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn bit(self, bit: u32) -> bool {
        self >> bit & 1 == 1
    }
    #[inline(always)]
    fn with_bit(self, bit: u32) -> Self {
        self | 1 << bit
    }
}

/// Why a slice of words cannot be viewed as a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The slice is empty: a filter has at least one block.
    Empty,
    /// The slice length is not a whole number of blocks.
    NotWholeBlocks {
        /// Words in the slice.
        words: usize,
        /// Words per block of the layout.
        words_per_block: usize,
    },
    /// More than [`MAX_BLOCKS`] blocks.
    TooManyBlocks(u64),
}

impl core::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ShapeError::Empty => write!(f, "a filter needs at least one block"),
            ShapeError::NotWholeBlocks {
                words,
                words_per_block,
            } => write!(
                f,
                "{words} words is not a whole number of {words_per_block}-word blocks"
            ),
            ShapeError::TooManyBlocks(n) => {
                write!(f, "{n} blocks exceeds the maximum of {MAX_BLOCKS}")
            }
        }
    }
}

/// Number of blocks in `words` for `layout`, checking the shape.
pub fn block_count<W: Word>(layout: Layout, words: &[W]) -> Result<u32, ShapeError> {
    let per_block = layout.block_bits() / W::BITS as usize;
    if words.is_empty() {
        return Err(ShapeError::Empty);
    }
    if !words.len().is_multiple_of(per_block) {
        return Err(ShapeError::NotWholeBlocks {
            words: words.len(),
            words_per_block: per_block,
        });
    }
    let blocks = (words.len() / per_block) as u64;
    u32::try_from(blocks).map_err(|_| ShapeError::TooManyBlocks(blocks))
}

/// Storage word and bit of lane `lane`, bit `bit` of block `block`.
#[inline(always)]
fn locate<W: Word>(layout: Layout, block: u32, lane: usize, bit: u32) -> (usize, u32) {
    let global =
        block as usize * layout.block_bits() + lane * layout.word_bits() as usize + bit as usize;
    (
        global / W::BITS as usize,
        (global % W::BITS as usize) as u32,
    )
}

/// A read-only view of a filter's words (the byte image as `u32` or `u64` words).
#[derive(Clone, Copy, Debug)]
pub struct FilterRef<'a, W: Word> {
    layout: Layout,
    blocks: u32,
    words: &'a [W],
}

impl<'a, W: Word> FilterRef<'a, W> {
    /// Views `words` as a filter of `layout`; the length must be a whole number of blocks.
    pub fn new(layout: Layout, words: &'a [W]) -> Result<Self, ShapeError> {
        let blocks = block_count(layout, words)?;
        Ok(FilterRef {
            layout,
            blocks,
            words,
        })
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Number of blocks `z`.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// The words (a whole number of blocks).
    pub fn words(&self) -> &'a [W] {
        self.words
    }

    /// Whether the key with 64-bit hash `hash` may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let block = block_index(hash, self.blocks);
        (0..self.layout.lanes()).all(|lane| {
            let (w, b) = locate::<W>(self.layout, block, lane, lane_bit(self.layout, hash, lane));
            self.words[w].bit(b)
        })
    }

    /// Whether `key` (hashed with XXH64 and `seed`) may be present.
    pub fn contains(&self, key: &[u8], seed: u64) -> bool {
        self.contains_hash(xxh64(key, seed))
    }

    /// Whether integer `key` (its little-endian bytes, hashed with `seed`) may be present.
    pub fn contains_u64(&self, key: u64, seed: u64) -> bool {
        self.contains_hash(xxh64_u64(key, seed))
    }
}

/// A mutable view of a filter's words.
#[derive(Debug)]
pub struct FilterMut<'a, W: Word> {
    layout: Layout,
    blocks: u32,
    words: &'a mut [W],
}

impl<'a, W: Word> FilterMut<'a, W> {
    /// Views `words` as a mutable filter of `layout`; the length must be a whole number of blocks.
    pub fn new(layout: Layout, words: &'a mut [W]) -> Result<Self, ShapeError> {
        let blocks = block_count(layout, words)?;
        Ok(FilterMut {
            layout,
            blocks,
            words,
        })
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Number of blocks `z`.
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// The words, mutably (a whole number of blocks).
    pub fn words_mut(&mut self) -> &mut [W] {
        self.words
    }

    /// A read-only view of the same words.
    pub fn as_ref(&self) -> FilterRef<'_, W> {
        FilterRef {
            layout: self.layout,
            blocks: self.blocks,
            words: self.words,
        }
    }

    /// Sets the bits of the key with 64-bit hash `hash`.
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        let block = block_index(hash, self.blocks);
        for lane in 0..self.layout.lanes() {
            let (w, b) = locate::<W>(self.layout, block, lane, lane_bit(self.layout, hash, lane));
            self.words[w] = self.words[w].with_bit(b);
        }
    }

    /// Inserts `key` (hashed with XXH64 and `seed`).
    pub fn insert(&mut self, key: &[u8], seed: u64) {
        self.insert_hash(xxh64(key, seed));
    }

    /// Inserts integer `key` (its little-endian bytes, hashed with `seed`).
    pub fn insert_u64(&mut self, key: u64, seed: u64) {
        self.insert_hash(xxh64_u64(key, seed));
    }

    /// Whether the key with 64-bit hash `hash` may be present.
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.as_ref().contains_hash(hash)
    }
}
