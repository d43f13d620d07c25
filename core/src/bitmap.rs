//! The one answer format of bulk lookups: one bit per key, bit `i % 64` of word `i / 64`.
//!
//! Written out as little-endian words this is the packed bitmap of the command line (bit `j`,
//! least significant first, of byte `i` answers key `8i + j`), and the layout the SIMD and GPU
//! backends fill directly.

use alloc::vec;
use alloc::vec::Vec;

/// A fixed number of answer bits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    /// `len` clear bits.
    pub fn new(len: usize) -> Bitmap {
        Bitmap {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// A bitmap of `answers` (non-zero = set).
    pub fn from_bools(answers: &[u8]) -> Bitmap {
        let mut b = Bitmap::new(answers.len());
        for (w, chunk) in b.words.iter_mut().zip(answers.chunks(64)) {
            *w = chunk
                .iter()
                .enumerate()
                .fold(0, |acc, (j, &a)| acc | u64::from(a != 0) << j);
        }
        b
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i`.
    ///
    /// # Panics
    /// If `i >= len`.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len, "bit {i} of a {}-bit bitmap", self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i` to `on`.
    ///
    /// # Panics
    /// If `i >= len`.
    #[inline]
    pub fn set(&mut self, i: usize, on: bool) {
        assert!(i < self.len, "bit {i} of a {}-bit bitmap", self.len);
        let m = 1u64 << (i % 64);
        if on {
            self.words[i / 64] |= m;
        } else {
            self.words[i / 64] &= !m;
        }
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// The indices of the set bits (or, with `set` false, of the clear bits), ascending.
    pub fn indices(&self, set: bool) -> impl Iterator<Item = usize> + '_ {
        let len = self.len;
        self.words.iter().enumerate().flat_map(move |(wi, &w)| {
            let base = wi * 64;
            let valid = if base + 64 <= len {
                u64::MAX
            } else {
                (1u64 << (len - base)) - 1
            };
            let mut bits = if set { w } else { !w } & valid;
            core::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let j = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Some(base + j)
            })
        })
    }

    /// The words (bits past `len` are zero).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The words, for a backend to fill. A writer must leave bits past `len` zero.
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// The packed bytes: bit `j` (least significant first) of byte `i` is bit `8i + j`;
    /// `len.div_ceil(8)` bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        out.truncate(self.len.div_ceil(8));
        out
    }
}
