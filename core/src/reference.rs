//! The scalar reference path over borrowed words: no allocator, no unsafe. Every other backend
//! is tested against this module.

use crate::key::Key;
use crate::layout::{block_index, lane_bit, Layout, MAX_BLOCKS};
use crate::params::Params;

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
    /// Number of set bits.
    fn ones(self) -> u32;
}

/// `Word` for the unsigned integers of each width.
macro_rules! impl_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn bit(self, bit: u32) -> bool {
                self >> bit & 1 == 1
            }
            #[inline(always)]
            fn with_bit(self, bit: u32) -> Self {
                self | 1 << bit
            }
            #[inline(always)]
            fn ones(self) -> u32 {
                self.count_ones()
            }
        }
    )*};
}

impl_word!(u32, u64);

/// Why a slice of words cannot be viewed as a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The slice holds a different number of blocks than the parameters say.
    BlockCount {
        /// Blocks the parameters describe.
        expected: u32,
        /// Blocks in the slice.
        found: u32,
    },
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
            ShapeError::BlockCount { expected, found } => write!(
                f,
                "the words hold {found} blocks but the filter has {expected}"
            ),
        }
    }
}

impl core::error::Error for ShapeError {}

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

/// A read-only view of a filter: its [`Params`] and its words (the byte image as `u32` or `u64`
/// words).
#[derive(Clone, Copy, Debug)]
pub struct FilterRef<'a, W: Word> {
    params: Params,
    words: &'a [W],
}

/// Checks that `words` holds exactly the blocks `params` describes.
fn check_shape<W: Word>(params: &Params, words: &[W]) -> Result<(), ShapeError> {
    let blocks = block_count(params.layout, words)?;
    if blocks != params.blocks {
        return Err(ShapeError::BlockCount {
            expected: params.blocks,
            found: blocks,
        });
    }
    Ok(())
}

impl<'a, W: Word> FilterRef<'a, W> {
    /// Views `words` as the filter `params` describes; the length must be exactly its blocks.
    pub fn new(params: Params, words: &'a [W]) -> Result<Self, ShapeError> {
        check_shape(&params, words)?;
        Ok(FilterRef { params, words })
    }

    crate::params_accessors!();

    /// The words (a whole number of blocks).
    #[inline]
    pub fn words(&self) -> &'a [W] {
        self.words
    }

    /// Whether the key with 64-bit hash `hash` may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let layout = self.params.layout;
        let block = block_index(hash, self.params.blocks);
        (0..layout.lanes()).all(|lane| {
            let (w, b) = locate::<W>(layout, block, lane, lane_bit(layout, hash, lane));
            self.words[w].bit(b)
        })
    }

    /// Whether `key` (hashed with the filter's seed) may be present.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.params.hash_key(key))
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.ones())).sum()
    }

    /// The false-positive rate of these very bits for a random absent key:
    /// `(1/z) Σ_blocks Π_lanes (set bits of the lane / W)` (a random key picks a uniform block and,
    /// in each lane, a uniform bit). Unlike [`Params::expected_fpr`], which averages over every
    /// filter that `n` keys could give, this needs no key count (e.g. after a union) and includes
    /// the luck of this filter's block loads.
    pub fn fpr_from_bits(&self) -> f64 {
        let layout = self.params.layout;
        let w = layout.word_bits() as usize;
        let per_lane = w / W::BITS as usize; // storage words per lane (W ≥ storage width here)
        let lane_words = |lane: &[W]| lane.iter().map(|x| x.ones()).sum::<u32>();
        let mut total = 0.0;
        if per_lane == 0 {
            // 32-bit lanes in 64-bit storage: two lanes per word.
            let block_words = layout.block_bits() / W::BITS as usize;
            for block in self.words.chunks_exact(block_words) {
                let mut p = 1.0;
                for lane in 0..layout.lanes() {
                    let (word, half) = (lane / 2, lane % 2);
                    let x = block[word];
                    let ones = (0..32).filter(|&b| x.bit(b + 32 * half as u32)).count();
                    p *= ones as f64 / w as f64;
                }
                total += p;
            }
        } else {
            for block in self.words.chunks_exact(per_lane * layout.lanes()) {
                let p: f64 = block
                    .chunks_exact(per_lane)
                    .map(|lane| f64::from(lane_words(lane)) / w as f64)
                    .product();
                total += p;
            }
        }
        total / f64::from(self.params.blocks)
    }
}

/// A mutable view of a filter: its [`Params`] and its words.
#[derive(Debug)]
pub struct FilterMut<'a, W: Word> {
    params: Params,
    words: &'a mut [W],
}

impl<'a, W: Word> FilterMut<'a, W> {
    /// Views `words` as the mutable filter `params` describes; the length must be exactly its
    /// blocks.
    pub fn new(params: Params, words: &'a mut [W]) -> Result<Self, ShapeError> {
        check_shape(&params, words)?;
        Ok(FilterMut { params, words })
    }

    crate::params_accessors!();

    /// The words, mutably (a whole number of blocks).
    #[inline]
    pub fn words_mut(&mut self) -> &mut [W] {
        self.words
    }

    /// A read-only view of the same words.
    #[inline]
    pub fn as_ref(&self) -> FilterRef<'_, W> {
        FilterRef {
            params: self.params,
            words: self.words,
        }
    }

    /// A shorter-lived mutable view of the same words (to pass on without giving this one up).
    #[inline]
    pub fn reborrow(&mut self) -> FilterMut<'_, W> {
        FilterMut {
            params: self.params,
            words: self.words,
        }
    }

    /// Sets the bits of the key with 64-bit hash `hash`.
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        let layout = self.params.layout;
        let block = block_index(hash, self.params.blocks);
        for lane in 0..layout.lanes() {
            let (w, b) = locate::<W>(layout, block, lane, lane_bit(layout, hash, lane));
            self.words[w] = self.words[w].with_bit(b);
        }
    }

    /// Inserts `key` (hashed with the filter's seed).
    #[inline]
    pub fn insert<K: Key + ?Sized>(&mut self, key: &K) {
        self.insert_hash(self.params.hash_key(key));
    }

    /// Whether the key with 64-bit hash `hash` may be present.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.as_ref().contains_hash(hash)
    }

    /// Whether `key` (hashed with the filter's seed) may be present.
    #[inline]
    pub fn contains<K: Key + ?Sized>(&self, key: &K) -> bool {
        self.as_ref().contains(key)
    }
}
