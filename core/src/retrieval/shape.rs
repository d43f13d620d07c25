//! The shape of a retrieval table and the one definition of where a key's cells are and what
//! their XOR must be (no allocation: every backend calls these or formats their constants).
//!
//! ```text
//! m      = mix(h + seed)                       h: the key's 64-bit hash, seed: construction seed
//! r      = mix(m)
//! start  = (m × S·L) >> 64                     a cell in segments 0 .. S−1
//! cell_0 = start
//! cell_j = (start + j·L) XOR ((r >> (j−1)·σ) mod L)        j = 1 .. a−1, L = 2^σ
//! want   = (m mod 2^f) << v | value            XOR of the a cells
//! ```
//! `mix` is MurmurHash3's 64-bit finaliser. `cell_j` lies in segment `segment(start) + j`, so a
//! key's cells fall in `a` consecutive segments and therefore in the `a` distinct banks
//! `segment mod a`.

use crate::format::FormatError;

/// MurmurHash3's 64-bit finaliser (`fmix64`): the construction's mixing function.
#[inline]
pub const fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(MIX_MUL1);
    x ^= x >> 33;
    x = x.wrapping_mul(MIX_MUL2);
    x ^ (x >> 33)
}

/// The bits that place a key's cells after its first: the high and low halves of the 128-bit
/// product `m × MIX_MUL2`, XORed (one multiply; every bit depends on every bit of `m`).
#[inline]
pub const fn spread(m: u64) -> u64 {
    let p = m as u128 * MIX_MUL2 as u128;
    (p >> 64) as u64 ^ p as u64
}

/// First multiplier of [`mix`].
pub const MIX_MUL1: u64 = 0xff51_afd7_ed55_8ccd;
/// Second multiplier of [`mix`].
pub const MIX_MUL2: u64 = 0xc4ce_b9fe_1a85_ec53;

/// Most cells a table may have: cell indices are 32-bit (on every backend).
pub const MAX_CELLS: u64 = u32::MAX as u64;
/// Largest segment length exponent σ (segments of 2^18 cells, as in Graf and Lemire).
pub const MAX_SEGMENT_BITS: u8 = 18;
/// Largest value width in bits.
pub const MAX_VALUE_BITS: u8 = 32;
/// Largest check (fingerprint) width in bits.
pub const MAX_CHECK_BITS: u8 = 32;

/// Everything that decides where a key's cells are and how wide they are: the kind metadata of
/// a retrieval file (`docs/FORMAT.md` §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Bits of value per key `v` (1 ..= 32).
    pub value_bits: u8,
    /// Check (fingerprint) bits per key `f` (0 ..= 32): an absent key is reported absent with
    /// probability `1 − 2^−f`.
    pub check_bits: u8,
    /// Cells per key `a` (3 or 4).
    pub arity: u8,
    /// `σ`: segments are `L = 2^σ` cells.
    pub segment_bits: u8,
    /// `S`: the segments a key's first cell can lie in (the table has `S + a − 1`).
    pub segment_count: u32,
    /// The construction seed (the one that peeled).
    pub seed: u64,
}

/// Cells per key of the table this crate builds by default: 4 (see the module documentation of
/// [`crate::retrieval`] for why).
pub const DEFAULT_ARITY: u8 = 4;

/// The cell indices of one key (the first `arity` entries are used).
pub type Cells = [u32; 4];

impl Shape {
    /// Bits per cell `c = v + f`.
    #[inline]
    pub const fn cell_bits(&self) -> u32 {
        self.value_bits as u32 + self.check_bits as u32
    }

    /// Cells per segment `L`.
    #[inline]
    pub const fn segment_len(&self) -> u64 {
        1 << self.segment_bits
    }

    /// Cells of the table: `(S + a − 1) × L`.
    #[inline]
    pub const fn cells(&self) -> u64 {
        (self.segment_count as u64 + self.arity as u64 - 1) * self.segment_len()
    }

    /// Bytes of the packed cell array: `⌈cells × c / 8⌉`.
    #[inline]
    pub const fn array_bytes(&self) -> u64 {
        (self.cells() * self.cell_bits() as u64).div_ceil(8)
    }

    /// 64-bit words that hold the packed array in memory, plus one zero word so that any cell
    /// is read with two word loads.
    #[inline]
    pub const fn words(&self) -> u64 {
        self.array_bytes().div_ceil(8) + 1
    }

    /// The mask of `v` value bits.
    #[inline]
    pub const fn value_mask(&self) -> u32 {
        (((1u64 << self.value_bits) - 1) & 0xffff_ffff) as u32
    }

    /// The mask of a whole cell (`c` bits).
    #[inline]
    pub const fn cell_mask(&self) -> u64 {
        if self.cell_bits() >= 64 {
            u64::MAX
        } else {
            (1 << self.cell_bits()) - 1
        }
    }

    /// The mixed hash `m = mix(h + seed)` that places a key.
    #[inline]
    pub const fn mixed(&self, hash: u64) -> u64 {
        mix(hash.wrapping_add(self.seed))
    }

    /// The cells of the key whose mixed hash is `m` (entries past `arity` are 0).
    #[inline]
    pub fn cells_of(&self, m: u64) -> Cells {
        self.cells_for(m, u32::from(self.arity))
    }

    /// [`Shape::cells_of`] for `arity` cells, at most 4 (a builder passes a constant, and its
    /// loops over the cells then unroll).
    #[inline(always)]
    pub fn cells_for(&self, m: u64, arity: u32) -> Cells {
        let len = self.segment_len() as u32;
        let span = u64::from(self.segment_count) << self.segment_bits;
        let start = ((u128::from(m) * u128::from(span)) >> 64) as u32;
        let r = spread(m);
        let mut out = [0u32; 4];
        out[0] = start;
        for j in 1..arity.min(4) {
            let offset = (r >> ((j - 1) * u32::from(self.segment_bits))) as u32 & (len - 1);
            out[j as usize] = (start + j * len) ^ offset;
        }
        out
    }

    /// What the XOR of a key's cells must be: its check bits (`m mod 2^f`) above its value.
    #[inline]
    pub fn want(&self, m: u64, value: u32) -> u64 {
        (self.check_of(m) << self.value_bits) | u64::from(value & self.value_mask())
    }

    /// The segment of the first cell of the key whose mixed hash is `m` (`< S`).
    #[inline]
    pub const fn segment_of(&self, m: u64) -> usize {
        let span = (self.segment_count as u128) << self.segment_bits;
        ((m as u128 * span) >> (64 + self.segment_bits as u32)) as usize
    }

    /// The check bits of the key whose mixed hash is `m`.
    #[inline]
    pub const fn check_of(&self, m: u64) -> u64 {
        if self.check_bits == 0 {
            0
        } else {
            m & ((1u64 << self.check_bits) - 1) // check_bits ≤ 32
        }
    }

    /// The answer for the XOR `x` of a key's cells: the value when the check bits match.
    #[inline]
    pub fn answer(&self, m: u64, x: u64) -> Option<u32> {
        let x = x & self.cell_mask();
        if x >> self.value_bits == self.check_of(m) {
            Some(x as u32 & self.value_mask())
        } else {
            None
        }
    }

    /// The bank of cell `cell` in the parallel-partitioned layout: its segment mod `a`. A key's
    /// `a` cells lie in `a` consecutive segments, so in `a` distinct banks.
    #[inline]
    pub const fn bank(&self, cell: u32) -> u32 {
        (cell >> self.segment_bits) % self.arity as u32
    }

    /// The address of cell `cell` inside its bank: `(segment / a) × L + cell mod L`.
    #[inline]
    pub const fn bank_address(&self, cell: u32) -> u64 {
        let segment = (cell >> self.segment_bits) as u64;
        (segment / self.arity as u64) * self.segment_len()
            + (cell as u64 & (self.segment_len() - 1))
    }

    /// The segment length and count for `keys` keys and `arity` cells per key, from Graf and
    /// Lemire's binary fuse sizing (arity 3: `L = 2^⌊ln n / ln 3.33 + 2.25⌋`, ×
    /// `max(1.125, 0.875 + 0.25 ln 10^6 / ln n)`; arity 4: `L = 2^⌊ln n / ln 2.91 − 0.5⌋`, ×
    /// `max(1.075, 0.77 + 0.305 ln 600000 / ln n)`), with `L ≤ 2^18`. `extra` segments are
    /// added on top (the builder grows a table that keeps failing). `None` when the table would
    /// exceed [`MAX_CELLS`].
    pub fn sized(keys: u64, arity: u8, extra: u32) -> Option<(u8, u32)> {
        let n = keys.max(2) as f64;
        let ln = libm::log(n);
        let (bits, factor) = if arity == 3 {
            (
                libm::floor(ln / libm::log(3.33) + 2.25),
                libm::fmax(1.125, 0.875 + 0.25 * libm::log(1e6) / ln),
            )
        } else {
            (
                libm::floor(ln / libm::log(2.91) - 0.5),
                libm::fmax(1.075, 0.77 + 0.305 * libm::log(600_000.0) / ln),
            )
        };
        let segment_bits = bits.clamp(1.0, f64::from(MAX_SEGMENT_BITS)) as u8;
        let len = 1u64 << segment_bits;
        let capacity = libm::round(n * factor) as u64;
        let total = capacity.div_ceil(len).max(u64::from(arity));
        let count = (total - (u64::from(arity) - 1)).checked_add(u64::from(extra))?;
        if (count + u64::from(arity) - 1) * len > MAX_CELLS {
            return None;
        }
        Some((segment_bits, count as u32))
    }

    /// Checks every field (the reader's range checks, `docs/FORMAT.md` §9).
    pub fn check(&self) -> Result<(), FormatError> {
        let bad = |what| Err(FormatError::Metadata { what });
        if !(1..=MAX_VALUE_BITS).contains(&self.value_bits) {
            return bad("retrieval value bits must be 1 to 32");
        }
        if self.check_bits > MAX_CHECK_BITS {
            return bad("retrieval check bits must be 0 to 32");
        }
        if !(3..=4).contains(&self.arity) {
            return bad("retrieval arity must be 3 or 4");
        }
        if self.segment_bits > MAX_SEGMENT_BITS {
            return bad("retrieval segment length must be at most 2^18 cells");
        }
        if self.segment_count == 0 {
            return bad("retrieval segment count must be at least 1");
        }
        if self.cells() > MAX_CELLS {
            return bad("retrieval table has more than 2^32 - 1 cells");
        }
        Ok(())
    }
}

/// The XOR of the `a` cells of `cells` in the packed little-endian array `words`, read with
/// [`read_cell`].
#[inline]
pub fn xor_cells(shape: &Shape, words: &[u64], cells: &Cells) -> u64 {
    let mut x = 0;
    for &c in &cells[..shape.arity as usize] {
        x ^= read_cell(words, shape.cell_bits(), c);
    }
    x
}

/// Cell `i` of `bits`-bit cells packed little-endian into `words` (cell `i` is bits
/// `i·c .. (i+1)·c` of the bit string; bit `p` is bit `p mod 64` of word `p / 64`), not yet
/// masked to `bits` bits. `words` must hold a word past the cell's last bit (the table keeps a
/// zero word at the end).
#[inline]
pub fn read_cell(words: &[u64], bits: u32, i: u32) -> u64 {
    let p = u64::from(i) * u64::from(bits);
    let w = (p >> 6) as usize;
    let s = (p & 63) as u32;
    // `<< 1 << (63 − s)` is `<< (64 − s)` without the undefined shift by 64 when s = 0.
    (words[w] >> s) | ((words[w + 1] << 1) << (63 - s))
}

/// The value stored for the key with hash `hash` in a table of `shape` over `words`, or `None`
/// when its check bits say it is absent (never with 0 check bits).
#[inline]
pub fn lookup(shape: &Shape, words: &[u64], hash: u64) -> Option<u32> {
    let m = shape.mixed(hash);
    shape.answer(m, xor_cells(shape, words, &shape.cells_of(m)))
}
