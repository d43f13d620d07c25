//! The cell algebra: one definition of every cell-based kind (static, counting, stable, spatial).
//!
//! All of them are the same machine. A key selects one block and, in each of the block's `L`
//! lanes, one bit (exactly where the static filter sets its bit: [`cell_index`]). Behind every
//! image bit `k = (block × L + lane) × W + bit` sits a *cell* of `c` bits ([`CellBits`]): for a
//! static filter the cell *is* the bit (`c = 1`); a counting or stable filter keeps a 4- or 8-bit
//! counter per bit; a spatial filter a 4-, 8- or 16-bit class number. A write applies one
//! [`CellUpdate`] to each of the key's `L` cells; a read combines the key's `L` cells with one
//! [`CellReduce`]. The byte image (the *projection*) always holds `bit k = cell k > 0`, so every
//! static lookup path (SIMD, GPU, HDL, Parquet export) serves every cell-based kind unchanged.
//!
//! | kind | cell | insert | delete | lookup |
//! |---|---|---|---|---|
//! | static | 1 bit | [`CellUpdate::Set`] | — | [`CellReduce::AllNonZero`] |
//! | counting | 4 / 8 bits | [`CellUpdate::Increment`] | [`CellUpdate::Decrement`] (refused unless all > 0) | `AllNonZero`; count: [`CellReduce::Min`] |
//! | stable | 4 / 8 bits | [`CellUpdate::Decay`] on `P` hash-picked cells, then [`CellUpdate::Max`]`(2^c − 1)` | — | `AllNonZero` |
//! | spatial | 4 / 8 / 16 bits | [`CellUpdate::Max`]`(class)` | — | class: [`CellReduce::Min`] (0: absent) |
//!
//! Cells wider than one bit are packed little-endian into 32-bit words, `32 / c` per word, cell
//! `k` at bits `c × (k mod 32/c)` of word `k / (32/c)` ([`cell`], [`set_cell`]). Every backend
//! writes its loops once over these operations (`docs/ARCHITECTURE.md`, "The cell pipeline"), and
//! [`CellsMut`] is the reference every backend is tested against.

use crate::kind::{CounterBits, FilterKind};
use crate::layout::{block_index, lane_bit, Layout};
use crate::params::Params;
use crate::reference::FilterRef;

mod scan;
pub use scan::{count_at_least, first_above, first_unprojected, for_each_cell};

/// Width of one cell: the bit itself (static), a counter, or a class number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CellBits {
    /// The image bit itself (static filters).
    One,
    /// 4-bit cells (maximum 15), eight per word.
    Four,
    /// 8-bit cells (maximum 255), four per word.
    Eight,
    /// 16-bit cells (maximum 65,535), two per word.
    Sixteen,
}

impl CellBits {
    /// Bits per cell.
    pub const fn bits(self) -> u32 {
        match self {
            CellBits::One => 1,
            CellBits::Four => 4,
            CellBits::Eight => 8,
            CellBits::Sixteen => 16,
        }
    }

    /// The largest value a cell holds (`2^c − 1`).
    pub const fn max(self) -> u32 {
        (1 << self.bits()) - 1
    }

    /// Cells per 32-bit word.
    pub const fn per_word(self) -> u32 {
        32 / self.bits()
    }

    /// The width for `bits`, if it is one (1, 4, 8 or 16).
    pub const fn from_bits(bits: u32) -> Option<CellBits> {
        match bits {
            1 => Some(CellBits::One),
            4 => Some(CellBits::Four),
            8 => Some(CellBits::Eight),
            16 => Some(CellBits::Sixteen),
            _ => None,
        }
    }
}

impl From<CounterBits> for CellBits {
    fn from(bits: CounterBits) -> CellBits {
        match bits {
            CounterBits::Four => CellBits::Four,
            CounterBits::Eight => CellBits::Eight,
        }
    }
}

/// What a write does to each of a key's cells (`max` is the cell width's [`CellBits::max`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellUpdate {
    /// Static insert: the cell (a bit) becomes 1.
    Set,
    /// Counting insert: + 1; a cell at `max` stays there (it is *sticky*: it no longer knows
    /// how many keys it counts).
    Increment,
    /// Counting delete: − 1, except a sticky cell at `max`; a cell at 0 stays 0 (the caller
    /// refuses a delete unless every cell of the key is positive, so this arm is a guard).
    Decrement,
    /// Stable decay: − 1 if positive (a cell at `max` decays too).
    Decay,
    /// Spatial insert (and the stable filter's set, with `Max(max)`): the larger of the cell and
    /// the value. Order-free: any insertion order, on any backend, leaves the same cells.
    Max(u32),
}

impl CellUpdate {
    /// The cell's new value.
    #[inline(always)]
    pub const fn apply(self, cell: u32, max: u32) -> u32 {
        match self {
            CellUpdate::Set => 1,
            CellUpdate::Increment => {
                if cell < max {
                    cell + 1
                } else {
                    max
                }
            }
            CellUpdate::Decrement => {
                if cell == max || cell == 0 {
                    cell
                } else {
                    cell - 1
                }
            }
            CellUpdate::Decay => cell.saturating_sub(1),
            CellUpdate::Max(v) => {
                let v = if v > max { max } else { v };
                if v > cell {
                    v
                } else {
                    cell
                }
            }
        }
    }
}

/// How a read combines a key's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellReduce {
    /// Membership: 1 if every cell is positive, else 0 (the static lookup of the projection).
    AllNonZero,
    /// The smallest cell: a spatial filter's class (0: absent), a counting filter's count (an
    /// upper bound on how often the key was inserted).
    Min,
}

impl CellReduce {
    /// The value a reduction starts from, for cells of at most `max`.
    #[inline(always)]
    pub const fn start(self, max: u32) -> u32 {
        match self {
            CellReduce::AllNonZero => 1,
            CellReduce::Min => max,
        }
    }

    /// The running value `acc` combined with one more cell.
    #[inline(always)]
    pub const fn step(self, acc: u32, cell: u32) -> u32 {
        match self {
            CellReduce::AllNonZero => (acc != 0 && cell != 0) as u32,
            CellReduce::Min => {
                if cell < acc {
                    cell
                } else {
                    acc
                }
            }
        }
    }
}

/// The 32-bit words of cells of `bits` a filter with `params` needs (`z × L × W × c / 32`).
pub const fn cell_words(params: &Params, bits: CellBits) -> u64 {
    params.bit_len() * bits.bits() as u64 / 32
}

/// The cell (= image bit) index of lane `lane`'s cell for `hash`:
/// `(block × L + lane) × W + lane bit`.
#[inline(always)]
pub fn cell_index(layout: Layout, blocks: u32, hash: u64, lane: usize) -> u64 {
    let b = u64::from(block_index(hash, blocks));
    (b * layout.lanes() as u64 + lane as u64) * u64::from(layout.word_bits())
        + u64::from(lane_bit(layout, hash, lane))
}

/// Reads cell `k`.
#[inline(always)]
pub fn cell(cells: &[u32], bits: CellBits, k: u64) -> u32 {
    let per = u64::from(bits.per_word());
    let shift = (k % per) as u32 * bits.bits();
    (cells[(k / per) as usize] >> shift) & bits.max()
}

/// Writes cell `k` (the value is masked to the width).
#[inline(always)]
pub fn set_cell(cells: &mut [u32], bits: CellBits, k: u64, value: u32) {
    let per = u64::from(bits.per_word());
    let shift = (k % per) as u32 * bits.bits();
    let w = &mut cells[(k / per) as usize];
    *w = (*w & !(bits.max() << shift)) | ((value & bits.max()) << shift);
}

/// `value`'s low `bits` bits repeated across a 32-bit word.
const fn repeat(value: u32, bits: u32) -> u32 {
    let mut out = 0;
    let mut at = 0;
    while at < 32 {
        out |= value << at;
        at += bits;
    }
    out
}

/// Each cell of `word` above a limit below half the cells' maximum, flagged by its top bit:
/// `top` holds every cell's top bit and `add` is `half − 1 − limit` in every cell. A cell's low
/// bits plus `add` carry into its top bit exactly when they exceed the limit, and no sum leaves
/// its cell; a cell whose own top bit is set is above the limit anyway.
#[inline(always)]
const fn cells_above(word: u32, top: u32, add: u32) -> u32 {
    (((word & !top) + add) | word) & top
}

/// The projection flags of one word of `C`-bit cells, packed into its low `32 / C` bits: the
/// cells above 0 ([`cells_above`]).
#[inline(always)]
fn positive_cells<const C: u32>(x: u32) -> u32 {
    let max = (1u32 << C) - 1;
    let (low, high) = (repeat(max >> 1, C), repeat(1 << (C - 1), C));
    let t = cells_above(x, high, low) >> (C - 1);
    // Pack the flags at bits 0, C, 2C, … into bits 0 .. 32/C.
    match C {
        4 => {
            let t = (t | t >> 3) & 0x0303_0303;
            let t = (t | t >> 6) & 0x000f_000f;
            (t | t >> 12) & 0xff
        }
        8 => {
            let t = (t | t >> 7) & 0x0003_0003;
            (t | t >> 14) & 0xf
        }
        _ => (t | t >> 15) & 0x3,
    }
}

/// The 32 projection bits of the `C` words of `C`-bit cells in `words`.
#[inline(always)]
fn projection_of<const C: u32>(words: &[u32]) -> u32 {
    (0..C as usize).fold(0, |image, j| {
        image | positive_cells::<C>(words[j]) << (j as u32 * (32 / C))
    })
}

/// The 32 projection bits of the cells in `words` (`c` words of `32/c` cells): bit `i` is set
/// iff cell `i` is positive (word-parallel).
pub fn projection_word(words: &[u32], bits: CellBits) -> u32 {
    match bits {
        CellBits::One => words[0],
        CellBits::Four => projection_of::<4>(words),
        CellBits::Eight => projection_of::<8>(words),
        CellBits::Sixteen => projection_of::<16>(words),
    }
}

#[inline(always)]
fn set_image_bit(image: &mut [u32], k: u64, on: bool) {
    let (w, m) = ((k / 32) as usize, 1u32 << (k % 32));
    if on {
        image[w] |= m;
    } else {
        image[w] &= !m;
    }
}

/// Why borrowed words cannot be viewed as the cells of a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CellShapeError {
    /// The parameters are not of a kind with cells wider than a bit (counting, stable, spatial).
    NotCells,
    /// The image is not `z × L × W / 32` words.
    Image,
    /// The cells are not `z × L × W × c / 32` words.
    Cells,
}

messages!(CellShapeError {
    NotCells => "the parameters are not of a counting, stable or spatial filter",
    Image => "the image is not the length the parameters need",
    Cells => "the cells are not the length the parameters need",
});

/// A mutable cell-based filter (counting, stable or spatial) over borrowed words: its
/// parameters, the projection image and the cells. The reference path of the cell algebra.
#[derive(Debug)]
pub struct CellsMut<'a> {
    params: Params,
    bits: CellBits,
    image: &'a mut [u32],
    cells: &'a mut [u32],
}

impl<'a> CellsMut<'a> {
    /// Views the words of a filter with `params`, whose kind has cells wider than one bit.
    pub fn new(
        params: Params,
        image: &'a mut [u32],
        cells: &'a mut [u32],
    ) -> Result<Self, CellShapeError> {
        let bits = params.kind.cell_bits();
        if bits == CellBits::One {
            return Err(CellShapeError::NotCells);
        }
        if image.len() as u64 != params.u32_len() {
            return Err(CellShapeError::Image);
        }
        if cells.len() as u64 != cell_words(&params, bits) {
            return Err(CellShapeError::Cells);
        }
        Ok(CellsMut {
            params,
            bits,
            image,
            cells,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The cell width.
    pub fn cell_bits(&self) -> CellBits {
        self.bits
    }

    /// The projection as a static filter view (bit set iff its cell is positive).
    pub fn projection(&self) -> FilterRef<'_, u32> {
        FilterRef::new(self.params, self.image).expect("the shape was checked")
    }

    /// The image and the cells, for a bulk backend.
    pub fn parts_mut(&mut self) -> (&mut [u32], &mut [u32]) {
        (self.image, self.cells)
    }

    /// The cell words.
    pub fn cells(&self) -> &[u32] {
        self.cells
    }

    /// Applies `op` to the cell `k` and keeps its image bit equal to `cell > 0`.
    #[inline(always)]
    fn update_cell(&mut self, k: u64, op: CellUpdate) {
        let v = op.apply(cell(self.cells, self.bits, k), self.bits.max());
        set_cell(self.cells, self.bits, k, v);
        set_image_bit(self.image, k, v > 0);
    }

    /// Applies `op` to each of the key's `L` cells.
    #[inline]
    pub fn update_hash(&mut self, hash: u64, op: CellUpdate) {
        let (layout, blocks) = (self.params.layout, self.params.blocks);
        for lane in 0..layout.lanes() {
            self.update_cell(cell_index(layout, blocks, hash, lane), op);
        }
    }

    /// Combines the key's `L` cells with `reduce`.
    #[inline]
    pub fn reduce_hash(&self, hash: u64, reduce: CellReduce) -> u32 {
        reduce_cells(&self.params, self.bits, self.cells, hash, reduce)
    }

    /// Whether the key with hash `hash` may be present (all its cells positive).
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.projection().contains_hash(hash)
    }

    /// Counting insert: [`CellUpdate::Increment`] on every cell of the key.
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) {
        self.update_hash(hash, CellUpdate::Increment);
    }

    /// Counting delete: [`CellUpdate::Decrement`] on every cell of the key (a cell at the
    /// maximum stays there; one that reaches 0 clears its image bit). Refused, changing nothing,
    /// unless all the key's cells are positive.
    #[inline]
    pub fn remove_hash(&mut self, hash: u64) -> Result<(), crate::counting::RemoveError> {
        if !self.contains_hash(hash) {
            return Err(crate::counting::RemoveError::NotPresent);
        }
        self.update_hash(hash, CellUpdate::Decrement);
        Ok(())
    }

    /// Stable-filter insert (Deng and Rafiei): [`CellUpdate::Decay`] on the `decrements` cells
    /// that [`crate::counting::stable_cells`] picks from the key's hash, then
    /// [`CellUpdate::Max`] of the maximum on every cell of the key.
    #[inline]
    pub fn stable_insert_hash(&mut self, hash: u64, decrements: u32) {
        for k in crate::counting::stable_cells(hash, self.params.bit_len(), decrements) {
            self.update_cell(k, CellUpdate::Decay);
        }
        self.update_hash(hash, CellUpdate::Max(self.bits.max()));
    }

    /// Spatial insert: [`CellUpdate::Max`] of `class` on every cell of the key.
    #[inline]
    pub fn spatial_insert_hash(&mut self, hash: u64, class: u32) {
        self.update_hash(hash, CellUpdate::Max(class));
    }
}

/// The key's `L` cells of `cells` (of width `bits`) combined with `reduce`: the read of the cell
/// algebra over read-only words.
#[inline]
pub fn reduce_cells(
    params: &Params,
    bits: CellBits,
    cells: &[u32],
    hash: u64,
    reduce: CellReduce,
) -> u32 {
    let (layout, blocks) = (params.layout, params.blocks);
    let mut acc = reduce.start(bits.max());
    for lane in 0..layout.lanes() {
        acc = reduce.step(
            acc,
            cell(cells, bits, cell_index(layout, blocks, hash, lane)),
        );
    }
    acc
}

impl FilterKind {
    /// The width of this kind's cells: one bit for the kinds without cells of their own
    /// (static, window, scalable), the counter width of counting and stable filters, the class
    /// width of spatial filters.
    pub const fn cell_bits(self) -> CellBits {
        match self {
            FilterKind::Counting { counter_bits } | FilterKind::Stable { counter_bits, .. } => {
                match counter_bits {
                    CounterBits::Four => CellBits::Four,
                    CounterBits::Eight => CellBits::Eight,
                }
            }
            FilterKind::Spatial { cell_bits, .. } => cell_bits,
            _ => CellBits::One,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_follow_their_definitions_at_every_width() {
        for bits in [CellBits::Four, CellBits::Eight, CellBits::Sixteen] {
            let max = bits.max();
            for c in [0, 1, 2, max - 1, max] {
                assert_eq!(CellUpdate::Set.apply(c, max), 1);
                assert_eq!(CellUpdate::Increment.apply(c, max), (c + 1).min(max));
                let dec = if c == 0 || c == max { c } else { c - 1 };
                assert_eq!(CellUpdate::Decrement.apply(c, max), dec);
                assert_eq!(CellUpdate::Decay.apply(c, max), c.saturating_sub(1));
                assert_eq!(CellUpdate::Max(3).apply(c, max), c.max(3));
                assert_eq!(CellUpdate::Max(max + 9).apply(c, max), max);
            }
        }
    }

    #[test]
    fn cells_pack_little_endian_and_never_touch_their_neighbours() {
        for bits in [CellBits::Four, CellBits::Eight, CellBits::Sixteen] {
            let mut words = [0u32; 4];
            let n = u64::from(bits.per_word()) * 4;
            for k in 0..n {
                set_cell(&mut words, bits, k, (k as u32 * 7 + 1) & bits.max());
            }
            for k in 0..n {
                assert_eq!(cell(&words, bits, k), (k as u32 * 7 + 1) & bits.max());
            }
            set_cell(&mut words, bits, 1, 0);
            assert_eq!(cell(&words, bits, 0), 1);
            assert_eq!(cell(&words, bits, 2), 15 & bits.max());
            assert_eq!(words[0] & bits.max(), 1, "cell 0 at the low bits");
        }
    }

    #[test]
    fn projection_words_are_the_positive_cells() {
        for bits in [CellBits::Four, CellBits::Eight, CellBits::Sixteen] {
            let n = bits.bits() as usize;
            let mut state = 0x1234_5678u32;
            for _ in 0..200 {
                let mut words = [0u32; 16];
                for k in 0..32u64 {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    // Zero half of the time, else any value up to the maximum.
                    let v = if state >> 31 == 0 {
                        0
                    } else {
                        (state >> 7) & bits.max()
                    };
                    set_cell(&mut words[..n], bits, k, v);
                }
                let want = (0..32).fold(0u32, |w, k| {
                    w | u32::from(cell(&words[..n], bits, k) > 0) << k
                });
                assert_eq!(projection_word(&words[..n], bits), want, "{bits:?}");
            }
        }
    }

    #[test]
    fn min_reduction_gives_the_smallest_cell() {
        assert_eq!(
            [5, 3, 9]
                .iter()
                .fold(CellReduce::Min.start(15), |a, &c| CellReduce::Min
                    .step(a, c)),
            3
        );
        let all = |cs: &[u32]| {
            cs.iter().fold(CellReduce::AllNonZero.start(15), |a, &c| {
                CellReduce::AllNonZero.step(a, c)
            })
        };
        assert_eq!(all(&[1, 2, 3]), 1);
        assert_eq!(all(&[1, 0, 3]), 0);
    }
}
