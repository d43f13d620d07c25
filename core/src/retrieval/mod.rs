//! Retrieval tables (Bloomier filters; Chazelle, Kilian, Rubinfeld and Tal, 2004): a static
//! map from each key of a build set to a `v`-bit value (1 to 32 bits), exact for every key of
//! the set, in about `v` bits per key. A key outside the set gets an arbitrary value, so `f`
//! check bits (0 to 32) are stored beside the value: an absent key is answered "absent" with
//! probability `1 − 2^−f`.
//!
//! # Construction: 4-wise binary fuse
//! A key's `a` cells lie in `a` consecutive segments (Graf and Lemire's binary fuse layout,
//! 2022); the XOR of its cells is its check bits above its value. Cells are packed at exactly
//! `c = v + f` bits, so a table takes `(v + f) × cells / keys` bits per key. The builder peels
//! the key–cell hypergraph ([`build`] has the passes) and retries with a new seed (recorded in
//! the file) until every key peels.
//!
//! Chosen by measurement (`benches/benches/retrieval.rs`, 2-core EPYC Zen 4 shared with other
//! jobs, 2026-11-28; figures in the helper report for `BENCHMARKS.md`):
//! - **space** decides: 4-wise sizing gives ×1.0772 of `v + f` bits per key at 10^6 keys and
//!   ×1.0754 at 10^8 (under the ×1.10 target for `v` = 8 and 16); 3-wise gives ×1.1305 and
//!   ×1.1259 (xorf's 3-wise `BinaryFuse8/16` the same), over the target at every size.
//! - **lookup**: 4 cell reads instead of 3, each one or two adjacent 64-bit loads in its own
//!   segment. At 10^8 keys the batched, prefetched 4-wise lookups ran at about the static
//!   filter's rate at 1 GiB in the same run (16-bit cells: 5.6 against 5.3 M keys/s on one
//!   thread), faster than xorf's unbatched 3-wise lookups (3.3 M keys/s); our 3-wise tables
//!   measured no faster than the 4-wise ones in that run (the misses overlap; the machine was
//!   shared, so small differences are noise).
//! - **ribbon** retrieval (Dillinger and Walzer) reaches ×1.01–1.05 with bumping, but a lookup
//!   reads `w × (v + f)` contiguous bits (two cache lines, one parity per result bit) and has no
//!   banked form; the issue asks for the banked one, and 4-wise binary fuse already meets the
//!   space target. Not built here.
//! - **FPGA banks**: bank `segment mod a` gives each of a key's `a` cells its own bank
//!   ([`Shape::bank`], [`Shape::bank_address`]), so all `a` reads happen in one clock.
//!
//! Arity 3 remains readable and buildable ([`RetrievalSpec::with_arity`]) for tables that trade
//! space for one read less.
//!
//! ```
//! # #[cfg(feature = "alloc")] {
//! use bloomlanes_core::retrieval::{RetrievalSpec, RetrievalTable};
//! use bloomlanes_core::Params;
//! use bloomlanes_core::Layout;
//! let keys: Vec<u64> = (0..1000).collect();
//! let values: Vec<u32> = keys.iter().map(|&k| (k * 7 % 256) as u32).collect();
//! let base = Params::new(Layout::L8x64, 1);
//! let t = RetrievalTable::build_keys(base, RetrievalSpec::new(8, 8), &keys, &values).unwrap();
//! assert!(keys.iter().zip(&values).all(|(k, &v)| t.get(k) == Some(v)));
//! # }
//! ```

use core::fmt;

#[cfg(feature = "alloc")]
pub mod build;
mod meta;
#[cfg(feature = "alloc")]
mod peel;
mod shape;
#[cfg(feature = "alloc")]
mod table;

pub use meta::HEADER_LAYOUT;
pub use shape::{
    lookup, mix, read_cell, xor_cells, Cells, Shape, DEFAULT_ARITY, MAX_CELLS, MAX_CHECK_BITS,
    MAX_SEGMENT_BITS, MAX_VALUE_BITS, MIX_MUL1, MIX_MUL2,
};
#[cfg(feature = "alloc")]
pub use table::{check_outputs, RetrievalInfo, RetrievalTable};

/// What to build: value and check widths and cells per key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetrievalSpec {
    /// Bits of value per key `v` (1 ..= 32).
    pub value_bits: u8,
    /// Check bits per key `f` (0 ..= 32).
    pub check_bits: u8,
    /// Cells per key (3 or 4; 4 by default).
    pub arity: u8,
}

/// Why a retrieval table cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetrievalError {
    /// Value or check bits, or arity, out of range.
    BadSpec(RetrievalSpec),
    /// Hashes and values differ in number.
    LengthMismatch {
        /// Hashes given.
        hashes: usize,
        /// Values given.
        values: usize,
    },
    /// A value does not fit in `v` bits.
    ValueTooWide {
        /// Its key's index.
        index: usize,
        /// The value.
        value: u32,
        /// The table's value bits.
        value_bits: u8,
    },
    /// The key at `index` repeats the key at `first` (the same 64-bit hash) with another value.
    ConflictingValues {
        /// Index of the repeat (the earliest such in the input).
        index: usize,
        /// Index of the earlier occurrence with a different value.
        first: usize,
    },
    /// More keys than a table of 2^32 − 1 cells holds.
    TooManyKeys {
        /// Keys given.
        keys: u64,
    },
    /// No seed peeled (never seen for distinct keys: the table also grows as attempts fail).
    Unpeelable {
        /// Attempts made.
        attempts: u32,
    },
}

impl fmt::Display for RetrievalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetrievalError::BadSpec(s) => write!(
                f,
                "retrieval widths out of range: {} value bits (1 to 32), {} check bits (0 to 32), arity {} (3 or 4)",
                s.value_bits, s.check_bits, s.arity
            ),
            RetrievalError::LengthMismatch { hashes, values } => {
                write!(f, "{hashes} keys but {values} values")
            }
            RetrievalError::ValueTooWide { index, value, value_bits } => write!(
                f,
                "value {value} of key {index} does not fit in {value_bits} bits"
            ),
            RetrievalError::ConflictingValues { index, first } => write!(
                f,
                "key {index} repeats key {first} with a different value (keys are told apart by their 64-bit hash)"
            ),
            RetrievalError::TooManyKeys { keys } => {
                write!(f, "{keys} keys need more than 2^32 - 1 cells")
            }
            RetrievalError::Unpeelable { attempts } => {
                write!(f, "no construction seed worked in {attempts} attempts")
            }
        }
    }
}

impl core::error::Error for RetrievalError {}
