//! The split-block layout: how a 64-bit hash picks a block and one bit in every lane of it.

use core::fmt;

/// Salts of the lane bit formula. `SALTS[0..8]` are the eight salts of the Parquet split-block
/// Bloom filter; `SALTS[8..16]` are the eight SHA-256 initial hash values (FIPS 180-4 §5.3.3)
/// with their lowest bit forced to 1, so that every salt is odd.
pub const SALTS: [u32; 16] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f373,
    0xa54f_f53b,
    0x510e_527f,
    0x9b05_688d,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// The largest number of blocks a filter may have (the block index is 32 bits wide).
pub const MAX_BLOCKS: u32 = u32::MAX;

/// One of the four supported shapes of a block: `L` lanes of `W`-bit words, one probe per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// 8 lanes of 32-bit words (256-bit blocks): the Parquet split-block Bloom filter.
    L8x32,
    /// 8 lanes of 64-bit words (512-bit blocks, one cache line).
    L8x64,
    /// 16 lanes of 32-bit words (512-bit blocks, one cache line).
    L16x32,
    /// 16 lanes of 64-bit words (1024-bit blocks).
    L16x64,
}

impl Layout {
    /// Every layout, smallest block first.
    pub const ALL: [Layout; 4] = [Layout::L8x32, Layout::L8x64, Layout::L16x32, Layout::L16x64];

    /// Number of lanes `L` (= probes per key, k).
    #[inline(always)]
    pub const fn lanes(self) -> usize {
        match self {
            Layout::L8x32 | Layout::L8x64 => 8,
            Layout::L16x32 | Layout::L16x64 => 16,
        }
    }

    /// Bits per lane word `W`.
    #[inline(always)]
    pub const fn word_bits(self) -> u32 {
        match self {
            Layout::L8x32 | Layout::L16x32 => 32,
            Layout::L8x64 | Layout::L16x64 => 64,
        }
    }

    /// `log2(W)`: how many bits of the salted product select the bit in a lane.
    #[inline(always)]
    pub const fn bit_index_bits(self) -> u32 {
        self.word_bits().trailing_zeros()
    }

    /// Right shift of the salted 32-bit product that leaves the lane bit index: `32 − log2 W`.
    #[inline(always)]
    pub const fn lane_shift(self) -> u32 {
        32 - self.bit_index_bits()
    }

    /// Bits in one block, `L × W`.
    #[inline(always)]
    pub const fn block_bits(self) -> usize {
        self.lanes() * self.word_bits() as usize
    }

    /// Bytes in one block.
    #[inline(always)]
    pub const fn block_bytes(self) -> usize {
        self.block_bits() / 8
    }

    /// 32-bit words in one block (the reference storage unit).
    #[inline(always)]
    pub const fn block_u32s(self) -> usize {
        self.block_bits() / 32
    }

    /// The short name used on the command line and in files, e.g. `"8x32"`.
    pub const fn name(self) -> &'static str {
        match self {
            Layout::L8x32 => "8x32",
            Layout::L8x64 => "8x64",
            Layout::L16x32 => "16x32",
            Layout::L16x64 => "16x64",
        }
    }

    /// Parses a name such as `"16x64"`.
    pub fn from_name(name: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The layout with `lanes` lanes of `word_bits`-bit words, if it is supported.
    pub const fn from_parts(lanes: usize, word_bits: u32) -> Option<Layout> {
        match (lanes, word_bits) {
            (8, 32) => Some(Layout::L8x32),
            (8, 64) => Some(Layout::L8x64),
            (16, 32) => Some(Layout::L16x32),
            (16, 64) => Some(Layout::L16x64),
            _ => None,
        }
    }
}

/// A layout name that [`Layout::from_str`](core::str::FromStr) does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownLayout;

impl fmt::Display for UnknownLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown layout (expected 8x32, 8x64, 16x32 or 16x64)")
    }
}

impl core::error::Error for UnknownLayout {}

impl core::str::FromStr for Layout {
    type Err = UnknownLayout;
    /// Parses a name such as `"16x64"`.
    fn from_str(s: &str) -> Result<Layout, UnknownLayout> {
        Layout::from_name(s.trim()).ok_or(UnknownLayout)
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The block that `hash` selects among `blocks` blocks: `((hash >> 32) × z) >> 32`.
/// Works for any block count, not only powers of two.
#[inline(always)]
pub const fn block_index(hash: u64, blocks: u32) -> u32 {
    (((hash >> 32) * blocks as u64) >> 32) as u32
}

/// The bit that `hash` sets in lane `lane` of its block:
/// `((lo32(hash) × SALTS[lane]) mod 2^32) >> (32 − log2 W)`.
#[inline(always)]
pub const fn lane_bit(layout: Layout, hash: u64, lane: usize) -> u32 {
    (hash as u32).wrapping_mul(SALTS[lane]) >> layout.lane_shift()
}

/// The bit index in every lane for `hash` (entries past `layout.lanes()` are zero).
#[inline]
pub const fn lane_bits(layout: Layout, hash: u64) -> [u8; 16] {
    let mut bits = [0u8; 16];
    let mut lane = 0;
    while lane < layout.lanes() {
        bits[lane] = lane_bit(layout, hash, lane) as u8;
        lane += 1;
    }
    bits
}

/// The mask of one block for `hash`, as the block's 32-bit words (little-endian order of the
/// byte image; entries past `layout.block_u32s()` are zero). A key is present iff every bit of
/// this mask is set in its block.
#[inline]
pub const fn block_mask(layout: Layout, hash: u64) -> [u32; 32] {
    let mut mask = [0u32; 32];
    let w = layout.word_bits() as usize;
    let mut lane = 0;
    while lane < layout.lanes() {
        let bit = lane * w + lane_bit(layout, hash, lane) as usize;
        mask[bit / 32] |= 1 << (bit % 32);
        lane += 1;
    }
    mask
}
