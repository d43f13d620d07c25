//! The kinds of filter on the split-block layout, and the parts of their identity that decide
//! which bits (or counters) a key touches.
//!
//! | kind | storage | insert | lookup | delete |
//! |---|---|---|---|---|
//! | static | the byte image | set the key's L bits | all L bits set | — |
//! | counting | the image (the *projection*: bit = counter > 0) + one `c`-bit counter per bit | counters + 1 (saturating, sticky) | all L bits set | counters − 1 (refused unless all > 0) |
//! | stable | as counting | decrement `P` cells picked by the key's hash, then set the key's L counters to the maximum | all L bits set | — |
//! | window | `g + 1` generations of the image, interleaved by block | set the bits in the current generation; rotate every `N/g` keys (or `T/g` time) | all L bits set in one generation | — |
//! | scalable | a chain of images growing by a factor `s` with rates tightening by `r` | into the last image until it is full | any image | — |
//! | spatial | the image + one `c`-bit class cell per bit (`c` = 4, 8 or 16) | cells = max(cell, class) | the smallest of the key's cells (0: absent) | — |
//! | retrieval | cells of `v + f` bits in binary fuse segments ([`crate::retrieval`]) | built once from (key, value) pairs | XOR of the key's cells: its value, or absent by the check bits | — |
//!
//! Static, counting, stable and spatial filters are one machine, the cell algebra of
//! [`crate::cell`]; window and scalable filters are arrangements of static images.
//!
//! See `docs/FORMAT.md` §9 for the definitions and file layouts.

use core::fmt;

use crate::cell::CellBits;

/// Width of the counters of counting and stable filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterBits {
    /// 4-bit counters (maximum 15), two per byte, low nibble first.
    Four,
    /// 8-bit counters (maximum 255), one per byte.
    Eight,
}

impl CounterBits {
    /// Bits per counter.
    pub const fn bits(self) -> u32 {
        match self {
            CounterBits::Four => 4,
            CounterBits::Eight => 8,
        }
    }

    /// The largest value a counter holds; a counter that reaches it sticks there.
    pub const fn max(self) -> u32 {
        (1 << self.bits()) - 1
    }

    /// The width for `bits`, if supported (4 or 8).
    pub const fn from_bits(bits: u32) -> Option<CounterBits> {
        match bits {
            4 => Some(CounterBits::Four),
            8 => Some(CounterBits::Eight),
            _ => None,
        }
    }
}

/// What a window generation's span is measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowUnit {
    /// Keys: a generation holds `span` keys.
    Keys,
    /// Time: a generation covers `span` nanoseconds of the keys' timestamps.
    Nanos,
}

/// The kind of a filter and its identity parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FilterKind {
    /// A plain split-block filter.
    #[default]
    Static,
    /// A counting filter: deletions.
    Counting {
        /// Counter width.
        counter_bits: CounterBits,
    },
    /// A stable Bloom filter (Deng and Rafiei, 2006): a stream filter that forgets old keys.
    Stable {
        /// Counter width (the maximum `Max = 2^c − 1`).
        counter_bits: CounterBits,
        /// Cells decremented before each insert (`P`).
        decrements: u32,
    },
    /// A sliding-window filter: `generations + 1` rotating generations; the last
    /// `generations × span` keys (or nanoseconds) are always found.
    Window {
        /// Generations `g` that make up the window (one more is kept for the newest keys).
        generations: u16,
        /// What a generation's span counts.
        unit: WindowUnit,
        /// Keys (or nanoseconds) per generation.
        span: u64,
    },
    /// A scalable filter (Almeida et al., 2007): a chain of filters that grows with the keys.
    Scalable {
        /// Capacity growth factor `s` between consecutive stages (2 or 4 are usual).
        growth: u8,
        /// Tightening ratio `r` of the stages' false-positive rates, in 1/256 (e.g. 205 ≈ 0.8).
        tightening: u8,
    },
    /// A spatial Bloom filter (Palmieri, Calderoni and Maio, 2014) on the split-block layout:
    /// each image bit has a cell holding a class number; a key's cells take the larger of their
    /// value and the key's class, and a lookup answers the smallest of the key's cells (0: absent).
    /// A key may be reported in a higher class than its own, never a lower one.
    Spatial {
        /// Cell width: 4, 8 or 16 bits (classes 1 to `2^c − 1`).
        cell_bits: CellBits,
        /// Number of classes `n` (1 ≤ n ≤ `2^c − 1`); their names are stored in the file.
        classes: u16,
    },
    /// A retrieval table (Bloomier filter, [`crate::retrieval`]): a static map from each key of
    /// a build set to a `value_bits`-bit value, with `check_bits` check bits per key.
    Retrieval {
        /// Bits of value per key (1 ..= 32).
        value_bits: u8,
        /// Check bits per key (0 ..= 32): an absent key passes with probability `2^−f`.
        check_bits: u8,
    },
}

impl FilterKind {
    /// The code stored in the file header (byte 26).
    pub const fn code(self) -> u8 {
        match self {
            FilterKind::Static => 0,
            FilterKind::Counting { .. } => 1,
            FilterKind::Stable { .. } => 2,
            FilterKind::Window { .. } => 3,
            FilterKind::Scalable { .. } => 4,
            FilterKind::Spatial { .. } => 5,
            FilterKind::Retrieval { .. } => 6,
        }
    }

    /// The name used on the command line and in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            FilterKind::Static => "static",
            FilterKind::Counting { .. } => "counting",
            FilterKind::Stable { .. } => "stable",
            FilterKind::Window { .. } => "window",
            FilterKind::Scalable { .. } => "scalable",
            FilterKind::Spatial { .. } => "spatial",
            FilterKind::Retrieval { .. } => "retrieval",
        }
    }

    /// The counter width of counting and stable filters.
    pub const fn counter_bits(self) -> Option<CounterBits> {
        match self {
            FilterKind::Counting { counter_bits } | FilterKind::Stable { counter_bits, .. } => {
                Some(counter_bits)
            }
            _ => None,
        }
    }
}

impl fmt::Display for FilterKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FilterKind::Static => f.write_str("static"),
            FilterKind::Counting { counter_bits } => {
                write!(f, "counting ({}-bit counters)", counter_bits.bits())
            }
            FilterKind::Stable {
                counter_bits,
                decrements,
            } => write!(
                f,
                "stable ({}-bit counters, {decrements} decrements per insert)",
                counter_bits.bits()
            ),
            FilterKind::Window {
                generations,
                unit,
                span,
            } => match unit {
                WindowUnit::Keys => write!(f, "window ({generations} generations of {span} keys)"),
                WindowUnit::Nanos => write!(f, "window ({generations} generations of {span} ns)"),
            },
            FilterKind::Scalable { growth, tightening } => write!(
                f,
                "scalable (growth {growth}, tightening {:.3})",
                f64::from(tightening) / 256.0
            ),
            FilterKind::Spatial { cell_bits, classes } => write!(
                f,
                "spatial ({classes} classes in {}-bit cells)",
                cell_bits.bits()
            ),
            FilterKind::Retrieval {
                value_bits,
                check_bits,
            } => write!(
                f,
                "retrieval ({value_bits}-bit values, {check_bits} check bits)"
            ),
        }
    }
}
