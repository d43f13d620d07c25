//! The cell algebra every filter kind shares, as the generator sees it (core defines it as
//! `bloomlanes_core::cell`; this mirror holds only what the hardware needs).
//!
//! A filter is `z` blocks of `L` lanes × `W` bits; a key selects one block and one bit per lane,
//! image bit `k = (block × L + lane) × W + bit`. Each image bit has a *cell* of `c` bits: the bit
//! itself for a static filter (`c = 1`), a counter for counting and stable filters (`c = 4, 8`),
//! a class number for a spatial filter (`c = 4, 8, 16`). An operation updates the key's `L` cells
//! with the [`CellAlu`] and answers with the [`Reduction`] of them. Lane `i`'s bank holds, per
//! block, the `W` cells of lane `i`: entry `block × W + bit` is cell `(block × L + i) × W + bit`.

use std::fmt;

use bloomlanes_core::CounterBits;

/// What an insert (and operation code 2) does to each of the key's cells: the pipeline's ALU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellAlu {
    /// Static filter (`c = 1`): insert sets the bit; code 2 clears the whole filter. The new cell
    /// does not depend on the old one, so the banks are written without being read.
    SetBit,
    /// Counting filter (`c = 4, 8`): insert adds 1 (saturating at `2^c − 1`, sticky there); code 2
    /// deletes: − 1 on every cell (a cell at the maximum stays), refused unless every cell is
    /// positive. Read-modify-write.
    Counter,
    /// Spatial filter (`c = 4, 8, 16`): insert `Max(v)` sets each cell to `max(cell, v)` (the stable
    /// filter's set-to-max is `Max(2^c − 1)`); code 2 does nothing. Read-modify-write.
    Max,
    /// Retrieval table (`c = v + f`, up to 64 bits): the cells are loaded (bank files or the
    /// management port) and no operation changes them; inserts and codes 2 and 3 do nothing.
    Fixed,
}

/// What a lookup answers from the key's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Membership: 1 when every cell is non-zero (the static lookup of the projection image).
    AllNonZero,
    /// The smallest cell (`c` bits): the spatial filter's class (0 = absent), a counting filter's
    /// count query.
    Min,
    /// Retrieval: the XOR of the cells; when its bits above the low `value_bits` equal the key's
    /// check bits the answer is `1 << value_bits | value` (found), else 0 (absent).
    Retrieve {
        /// Bits of value `v` (the check bits are the cell's others).
        value_bits: u32,
    },
}

impl Reduction {
    /// Registers between a write-through design's bank read data and its answer register: a
    /// retrieval XORs its cells one stage before the check compare (the XOR of four banks and
    /// the compare in one cycle were registered ECP5's critical path); the others reduce in
    /// the answer register itself.
    pub(crate) fn stages_before_answer(self) -> u32 {
        match self {
            Reduction::Retrieve { .. } => 1,
            Reduction::AllNonZero | Reduction::Min => 0,
        }
    }
}

/// The cells of a design: width, ALU and reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CellSpec {
    /// Bits per cell (`c`).
    pub bits: u32,
    /// How updates change the cells.
    pub alu: CellAlu,
    /// What a lookup answers.
    pub reduction: Reduction,
}

impl CellSpec {
    /// The static filter: 1-bit cells, set, membership.
    pub const STATIC: CellSpec = CellSpec {
        bits: 1,
        alu: CellAlu::SetBit,
        reduction: Reduction::AllNonZero,
    };

    /// The counting filter: `bits`-bit counters, increment and decrement, membership.
    pub fn counting(bits: CounterBits) -> CellSpec {
        CellSpec {
            bits: bits.bits(),
            alu: CellAlu::Counter,
            reduction: Reduction::AllNonZero,
        }
    }

    /// The spatial filter: class numbers of `bits` bits (4, 8 or 16), insert `Max(class)`,
    /// lookup `Min` (0 = absent).
    pub fn spatial(bits: u32) -> CellSpec {
        CellSpec {
            bits,
            alu: CellAlu::Max,
            reduction: Reduction::Min,
        }
    }

    /// A retrieval table's cells: `value_bits + check_bits` bits (`v` 1 to 31: the answer
    /// `{found, value}` is at most 32 bits; `f` 0 to 32), loaded, XORed and checked.
    pub fn retrieval(value_bits: u32, check_bits: u32) -> CellSpec {
        CellSpec {
            bits: value_bits + check_bits,
            alu: CellAlu::Fixed,
            reduction: Reduction::Retrieve { value_bits },
        }
    }

    /// The largest cell value, `2^c − 1`.
    pub fn max(self) -> u32 {
        if self.bits >= 32 {
            u32::MAX
        } else {
            (1 << self.bits) - 1
        }
    }

    /// Whether an update reads the cells it writes (read-modify-write with forwarding).
    pub fn reads_cells(self) -> bool {
        !matches!(self.alu, CellAlu::SetBit | CellAlu::Fixed)
    }

    /// Width of an answer: 1 for membership, `c` for the minimum, `1 + v` for a retrieval.
    pub fn answer_bits(self) -> u32 {
        match self.reduction {
            Reduction::AllNonZero => 1,
            Reduction::Min => self.bits,
            Reduction::Retrieve { value_bits } => 1 + value_bits,
        }
    }

    /// Width of the value an insert carries (`Max(v)`: `c`; the others none).
    pub fn value_bits(self) -> u32 {
        match self.alu {
            CellAlu::Max => self.bits,
            CellAlu::SetBit | CellAlu::Counter | CellAlu::Fixed => 0,
        }
    }

    /// What the operation codes of port 0 do, in one line (`0 lookup, 1 insert, ...`).
    pub(crate) fn op_codes(self) -> &'static str {
        match self.alu {
            CellAlu::SetBit => "0 lookup, 1 insert, 2 clear, 3 no-op",
            CellAlu::Counter => "0 lookup, 1 insert, 2 delete, 3 no-op",
            CellAlu::Max => "0 lookup, 1 insert (the class on the value field), 2 and 3 no-op",
            CellAlu::Fixed => "0 lookup, 1 to 3 no-op",
        }
    }

    /// The kind of filter, as the kit's files name it (`static`, `counting`, ...).
    pub fn kind_name(self) -> &'static str {
        match self.alu {
            CellAlu::SetBit => "static",
            CellAlu::Counter => "counting",
            CellAlu::Max => "spatial",
            CellAlu::Fixed => "retrieval",
        }
    }

    /// Hex digits per cell in a bank file.
    pub fn hex_digits(self) -> usize {
        self.bits.div_ceil(4) as usize
    }

    /// Refuses combinations the pipeline does not build.
    pub fn validate(self) -> Result<(), String> {
        if let (CellAlu::Fixed, Reduction::Retrieve { value_bits: v }) = (self.alu, self.reduction)
        {
            let f = self.bits.wrapping_sub(v);
            return if (1..=31).contains(&v) && f <= 32 {
                Ok(())
            } else {
                Err(format!(
                    "retrieval cells need 1 to 31 value bits and 0 to 32 check bits, not {v} and {f}"
                ))
            };
        }
        if self.alu == CellAlu::Fixed || matches!(self.reduction, Reduction::Retrieve { .. }) {
            return Err("fixed cells answer a retrieval (Retrieve) only, and only they do".into());
        }
        let widths: &[u32] = match self.alu {
            CellAlu::SetBit => &[1],
            CellAlu::Counter => &[4, 8],
            CellAlu::Max => &[4, 8, 16],
            CellAlu::Fixed => &[],
        };
        if !widths.contains(&self.bits) {
            return Err(format!(
                "{:?} cells must be {widths:?} bits wide, not {}",
                self.alu, self.bits
            ));
        }
        if self.alu == CellAlu::SetBit && self.reduction != Reduction::AllNonZero {
            return Err("1-bit cells answer membership (AllNonZero) only".into());
        }
        Ok(())
    }
}

impl fmt::Display for CellSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let alu = match self.alu {
            CellAlu::SetBit => "bit set",
            CellAlu::Counter => "counter",
            CellAlu::Max => "max",
            CellAlu::Fixed => "fixed",
        };
        let red = match self.reduction {
            Reduction::AllNonZero => "all non-zero",
            Reduction::Min => "min",
            Reduction::Retrieve { .. } => "XOR retrieval",
        };
        write!(f, "{}-bit cells, {alu} ALU, {red} lookups", self.bits)
    }
}

/// Cell `k` of cells of `bits` bits packed little-endian in 32-bit words (`32 / c` per word,
/// cell `k` at bits `c × (k mod 32/c)` of word `k / (32/c)`), as core packs counters.
pub fn packed_cell(words: &[u32], bits: u32, k: u64) -> u32 {
    let per = u64::from(32 / bits);
    let shift = (k % per) as u32 * bits;
    let mask = if bits >= 32 {
        u32::MAX
    } else {
        (1 << bits) - 1
    };
    (words[(k / per) as usize] >> shift) & mask
}

/// Index of the cell at entry `entry` of lane `lane`'s bank: `(block × L + lane) × W + bit` with
/// `block, bit = entry / W, entry % W`.
pub fn cell_index(lanes: usize, word_bits: u32, lane: usize, entry: u64) -> u64 {
    let w = u64::from(word_bits);
    (entry / w * lanes as u64 + lane as u64) * w + entry % w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_of_the_kinds_validate_and_others_do_not() {
        assert!(CellSpec::STATIC.validate().is_ok());
        assert!(CellSpec::counting(CounterBits::Four).validate().is_ok());
        for c in [4, 8, 16] {
            assert!(CellSpec::spatial(c).validate().is_ok());
        }
        assert!(CellSpec::spatial(2).validate().is_err());
        let mut s = CellSpec::STATIC;
        s.reduction = Reduction::Min;
        assert!(s.validate().is_err());
        let mut s = CellSpec::counting(CounterBits::Eight);
        s.bits = 16;
        assert!(s.validate().is_err());
    }

    #[test]
    fn packing_matches_core_counters() {
        let words: Vec<u32> = (0..8u32).map(|i| i.wrapping_mul(0x9e37_79b9)).collect();
        for bits in [CounterBits::Four, CounterBits::Eight] {
            for k in 0..(words.len() as u64 * 32 / u64::from(bits.bits())) {
                assert_eq!(
                    packed_cell(&words, bits.bits(), k),
                    bloomlanes_core::counting::counter(&words, bits, k)
                );
            }
        }
        assert_eq!(packed_cell(&[0x1234_abcd], 16, 1), 0x1234);
        assert_eq!(packed_cell(&[0b100], 1, 2), 1);
    }
}
