//! The cells of one key: per-ISA code that reads, updates and writes back the `L` cells a key
//! touches in its block (one per lane), for every cell-based kind (`bloomlanes_core::cell`:
//! counting, stable, spatial).
//!
//! Cell `k` of a block (`k = lane × W + bit`) is `c` bits at bit `c × (k mod 32/c)` of the
//! block's cell word `k / (32/c)`. The `L` cells of a key lie in `L` different words: lane `i`
//! owns the `Q = W × c / 32` words `i·Q .. (i+1)·Q` and the key touches word `i·Q + bit_i /
//! (32/c)` of them.
//!
//! A write is one of the core's [`CellUpdate`](bloomlanes_core::CellUpdate)s as a const generic
//! ([`INC`], [`DEC`], [`MAX`] with a value); [`CellIsa::update`] also keeps the image (the
//! projection, bit = cell > 0) right. A read is [`CellIsa::read`], the core's
//! [`CellReduce::Min`](bloomlanes_core::CellReduce) of the key's cells. `Decay` touches single
//! cells anywhere in the filter (the stable filter's picked cells), never a key's `L` cells, so
//! it is not a lane operation: `cell_kernel` applies it cell by cell.
//!
//! [`CellIsa::lanes`] and [`CellIsa::read`] have scalar defaults, lane by lane (the portable and
//! SSE2 paths, which have no variable shifts, and 16-bit cells everywhere: a key's 8 or 16 cells
//! lie in 8 or 16 of its block's 128 to 512 cell words, too sparse for a sweep). AVX2
//! (`avx2.rs`) and AVX-512 (`avx512.rs`) override the writes of 4- and 8-bit cells in *word
//! space*: they sweep the block's cell words a register at a time and update the cell of the
//! words the key touches under a mask. The 8x32 writes on AVX-512 have kernels of their own on
//! 64-bit variable shifts (`arch::x86_64::counters_8x32`), fed with lane bit indices computed a
//! chunk of keys ahead ([`CellIsa::ahead`]). Gathers were measured 6× slower than the scalar
//! lanes for writes on the reference machine (AMD EPYC); reads gather on AVX-512 (see
//! `avx512.rs`).

use bloomlanes_core::lane_bit;

use crate::shape::Shape;
use crate::vector::{self, Isa};

/// The cells of the lanes whose bit indices are `$bits` and whose lanes' cell words start at
/// `$first` (`lane × Q`, plus the block's offset): each lane's word `first + bit / (32/C)`
/// gathered by `$gather`, shifted right by `(bit mod 32/C) × C` and masked to `C` bits. Written
/// once for the register widths of AVX2 and AVX-512, whose intrinsics follow `;` (add, shift
/// right and left by a count, and, variable shift right, broadcast). To be expanded in an
/// `unsafe` block of a function compiled with the ISA.
#[cfg(target_arch = "x86_64")]
macro_rules! gathered_cells {
    ($C:ident, $first:expr, $bits:expr, $gather:expr;
     $add:ident, $srl:ident, $sll:ident, $and:ident, $srlv:ident, $set1:ident) => {{
        let per = 32 / $C;
        let count = |n: u32| _mm_cvtsi32_si128(n.trailing_zeros() as i32);
        let words = $add($first, $srl($bits, count(per)));
        let sh = $sll($and($bits, $set1(per as i32 - 1)), count($C));
        $and($srlv($gather(words), sh), $set1((1 << $C) - 1))
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod read8;

/// [`CellUpdate::Increment`](bloomlanes_core::CellUpdate::Increment): add one to every cell of
/// the key that is below the maximum; the key's image bits are set.
pub(crate) const INC: u8 = 0;
/// [`CellUpdate::Decrement`](bloomlanes_core::CellUpdate::Decrement): subtract one from every
/// cell of the key that is below the maximum (all are positive: the caller refuses the key
/// otherwise); the image bit of each cell that reaches 0 is cleared.
pub(crate) const DEC: u8 = 1;
/// [`CellUpdate::Max`](bloomlanes_core::CellUpdate::Max): every cell of the key becomes the
/// larger of itself and the value `v` (`0 < v <= max`); the key's image bits are set.
pub(crate) const MAX: u8 = 2;

/// One block's image words and cell words, as the kernels index them (reads only read
/// through them).
#[derive(Clone, Copy)]
pub(crate) struct Block {
    /// The block's `block_u32s` image words.
    pub(crate) image: *mut u32,
    /// The block's `block_u32s × C` cell words.
    pub(crate) cells: *mut u32,
}

impl Block {
    /// Block `b` of the blocks of `S` and `C`-bit cells whose image and cells start at
    /// `first` (the address arithmetic wraps; the kernels index only blocks that exist).
    #[inline(always)]
    pub(crate) fn nth<S: Shape, const C: u32>(first: Block, b: usize) -> Block {
        let per = S::LAYOUT.block_u32s();
        Block {
            image: first.image.wrapping_add(b * per),
            cells: first.cells.wrapping_add(b * per * C as usize),
        }
    }
}

/// A key as a write sees it: its hash, its value (for [`MAX`]) and what was computed ahead.
#[derive(Clone, Copy)]
pub(crate) struct Key<A> {
    /// The key's hash.
    pub(crate) hash: u64,
    /// The value of [`MAX`] (`0 < value <= 2^C − 1`).
    pub(crate) value: u32,
    /// The key's [`CellIsa::ahead`].
    pub(crate) ahead: A,
}

/// Where cell `k` of a block lives: its word within the block's cells and its shift.
#[inline(always)]
const fn place<const C: u32>(k: u32) -> (usize, u32) {
    let per_word = 32 / C;
    ((k / per_word) as usize, (k % per_word) * C)
}

/// The cell index (`lane × W + bit`) of lane `lane`'s cell for the key whose low hash bits are
/// `h`, within its block of `S`.
#[inline(always)]
fn lane_cell<S: Shape>(h: u32, lane: usize) -> u32 {
    let layout = S::LAYOUT;
    lane as u32 * layout.word_bits() + lane_bit(layout, u64::from(h), lane)
}

/// [`CellIsa::lanes`] lane by lane.
///
/// # Safety
/// As [`CellIsa::lanes`].
#[inline(always)]
pub(crate) unsafe fn scalar_lanes<S: Shape, const C: u32, const OP: u8>(b: Block, h: u32, v: u32) {
    let (ib, cb) = (b.image, b.cells);
    let max = (1u32 << C) - 1;
    for lane in 0..S::LAYOUT.lanes() {
        let k = lane_cell::<S>(h, lane);
        let (w, sh) = place::<C>(k);
        // SAFETY: `k < L × W`, so `w < L × W × C / 32 = block_u32s × C`: the word lies in the
        // block's cells, which are ours to read and write (caller).
        let p = unsafe { cb.add(w) };
        // SAFETY: as above.
        let word = unsafe { *p };
        let cell = (word >> sh) & max;
        let new = match OP {
            INC if cell < max => word + (1 << sh),
            DEC if cell < max => {
                if cell == 1 {
                    // SAFETY: `k < L × W`, so its image word `k / 32` lies in the block's
                    // image, ours to write (caller).
                    unsafe { *ib.add(k as usize / 32) &= !(1u32 << (k % 32)) };
                }
                word.wrapping_sub(1 << sh)
            }
            MAX if v > cell => word + ((v - cell) << sh),
            _ => word,
        };
        // SAFETY: as above.
        unsafe { *p = new };
    }
}

/// The smallest of the key's `L` cells, lane by lane.
///
/// # Safety
/// `cb` points to the `S::LAYOUT.block_u32s() × C` readable cell words of one block.
#[inline(always)]
pub(crate) unsafe fn scalar_min<S: Shape, const C: u32>(cb: *mut u32, h: u32) -> u32 {
    let max = (1u32 << C) - 1;
    let mut acc = max;
    for lane in 0..S::LAYOUT.lanes() {
        let (w, sh) = place::<C>(lane_cell::<S>(h, lane));
        // SAFETY: the word lies in the block's cells (see `scalar_lanes`), readable (caller).
        acc = acc.min((unsafe { *cb.add(w) } >> sh) & max);
    }
    acc
}

/// Whether blocks of `S` are 8x32 (the layout with AVX-512 write kernels of its own).
pub(crate) const fn is_8x32<S: Shape>() -> bool {
    S::LAYOUT.lanes() == 8 && S::LAYOUT.word_bits() == 32
}

/// Cell words per lane (`Q = W × c / 32`: 4 to 32).
pub(crate) const fn words_per_lane<S: Shape, const C: u32>() -> usize {
    S::LAYOUT.word_bits() as usize * C as usize / 32
}

/// [`CellIsa::update`] through the image block's vector operations and [`CellIsa::lanes`].
///
/// # Safety
/// As [`CellIsa::update`].
#[inline(always)]
pub(crate) unsafe fn update_with_lanes<I: CellIsa, S: Shape, const C: u32, const OP: u8>(
    b: Block,
    h: u64,
    v: u32,
) -> bool {
    // SAFETY: the block's image and cells are ours and the CPU supports the ISA (caller); DEC
    // runs only when the image holds the key's mask, so every cell is positive.
    unsafe {
        if OP == DEC {
            if !vector::contains::<I, S>(b.image, h) {
                return false;
            }
        } else {
            vector::insert::<I, S>(b.image, h);
        }
        if C == 16 {
            // A key's 16-bit cells are too sparse in their block for a sweep (see above).
            scalar_lanes::<S, C, OP>(b, h as u32, v);
        } else {
            I::lanes::<S, C, OP>(b, h as u32, v);
        }
    }
    true
}

/// One ISA's reads and writes of a key's cells.
pub(crate) trait CellIsa: Isa + Sized {
    /// What a key's update or read can have computed ahead of it (a chunk of keys at a time,
    /// off the per-key path): nothing by default.
    type Ahead: Copy + Default;

    /// The [`CellIsa::Ahead`] of the key with hash `h` in blocks of `S` with `C`-bit cells.
    ///
    /// # Safety
    /// The CPU supports the ISA.
    unsafe fn ahead<S: Shape, const C: u32>(h: u64) -> Self::Ahead;

    /// Applies `OP` (with the key's value for [`MAX`]) to the key's cells in the block `b` and
    /// keeps its image right: [`INC`] and [`MAX`] set the key's bits in the image block (as
    /// [`crate::vector::insert`]), then [`CellIsa::lanes`]; [`DEC`] is refused (`false`,
    /// nothing changed) unless the image block holds the key's mask (the image is the cells'
    /// projection: every cell of the key is positive), else [`CellIsa::lanes`].
    ///
    /// # Safety
    /// As [`CellIsa::lanes`], without its condition on the cells.
    #[inline(always)]
    unsafe fn update<S: Shape, const C: u32, const OP: u8>(b: Block, k: Key<Self::Ahead>) -> bool {
        // SAFETY: the caller's contract.
        unsafe { update_with_lanes::<Self, S, C, OP>(b, k.hash, k.value) }
    }

    /// Applies `OP` (value `v` for [`MAX`]) to the `L` cells (`C` bits each, 4 or 8) that `h`
    /// (the low 32 bits of the key's hash) picks in the block `b`; for [`DEC`], clears the bit
    /// of every cell that reaches 0 in the block's image.
    ///
    /// # Safety
    /// `b` is the `S::LAYOUT.block_u32s()` image words and `S::LAYOUT.block_u32s() × C` cell
    /// words of one block, all writable and not accessed by anyone else during the call; for
    /// [`DEC`] every cell of the key is positive, for [`MAX`] `v <= 2^C − 1`; the CPU supports
    /// the ISA.
    #[inline(always)]
    unsafe fn lanes<S: Shape, const C: u32, const OP: u8>(b: Block, h: u32, v: u32) {
        // SAFETY: the caller's contract.
        unsafe { scalar_lanes::<S, C, OP>(b, h, v) }
    }

    /// Whether the image block at `ib` holds every bit of the key with hash `h` (all the key's
    /// cells are positive).
    ///
    /// # Safety
    /// `ib` points to the `S::LAYOUT.block_u32s()` readable image words of one block; the CPU
    /// supports the ISA.
    #[inline(always)]
    unsafe fn present<S: Shape>(ib: *const u32, h: u64) -> bool {
        // SAFETY: the caller's contract.
        unsafe { vector::contains::<Self, S>(ib, h) }
    }

    /// The smallest of the key's `L` cells (`C` bits each) in the block `b`: 0, without
    /// reading the cells, if the image block lacks one of the key's bits (the image is the
    /// cells' projection, so one of its cells is 0).
    ///
    /// # Safety
    /// `b`'s image and cells are one block's, readable; the CPU supports the ISA.
    #[inline(always)]
    unsafe fn read<S: Shape, const C: u32>(b: Block, h: u64) -> u32 {
        // SAFETY: the caller's contract.
        unsafe {
            if vector::contains::<Self, S>(b.image, h) {
                scalar_min::<S, C>(b.cells, h as u32)
            } else {
                0
            }
        }
    }

    /// [`CellIsa::read`] of two keys, of blocks `b[0]` and `b[1]` of the blocks from `at` (by
    /// default one after the other; an ISA may interleave them).
    ///
    /// # Safety
    /// Both blocks exist and are readable, and the cells from `at` hold at most `i32::MAX`
    /// words; the CPU supports the ISA.
    #[inline(always)]
    unsafe fn read2<S: Shape, const C: u32>(at: Block, b: [usize; 2], h: [u64; 2]) -> [u32; 2] {
        // SAFETY: the caller's contract.
        unsafe { read_each::<Self, S, C>(at, b, h) }
    }

    /// [`CellIsa::read`] of the 8 keys of `k` into `k.out` (by default two at a time with
    /// [`CellIsa::read2`]; an ISA may read all 8 together). Without `IMAGE` an ISA may read the
    /// cells without testing the image first (the same answers: the image is the cells'
    /// projection, and the core's reference reads only the cells), cheaper where the cells are
    /// in cache anyway.
    ///
    /// # Safety
    /// As [`CellIsa::read2`], for the 8 blocks.
    #[inline(always)]
    unsafe fn read8<S: Shape, const C: u32, const IMAGE: bool>(at: Block, k: &mut Eight) {
        // SAFETY: the caller's contract.
        unsafe { read_pairs::<Self, S, C>(at, k) }
    }
}

/// Eight keys of a read ([`CellIsa::read8`]): their blocks (of the blocks from the read's
/// `at`), their hashes, and their answers.
pub(crate) struct Eight {
    /// Key `i`'s block.
    pub(crate) blocks: [usize; 8],
    /// Key `i`'s hash.
    pub(crate) hashes: [u64; 8],
    /// Key `i`'s smallest cell, once read.
    pub(crate) out: [u32; 8],
}

/// [`CellIsa::read8`] as four [`CellIsa::read2`]s.
///
/// # Safety
/// As [`CellIsa::read8`].
#[inline(always)]
pub(crate) unsafe fn read_pairs<I: CellIsa, S: Shape, const C: u32>(at: Block, k: &mut Eight) {
    let (b, h) = (k.blocks, k.hashes);
    for i in (0..8).step_by(2) {
        // SAFETY: blocks `b[i]` and `b[i + 1]` exist and are readable (caller); the CPU
        // supports I.
        let got = unsafe { I::read2::<S, C>(at, [b[i], b[i + 1]], [h[i], h[i + 1]]) };
        k.out[i..i + 2].copy_from_slice(&got);
    }
}

/// Two [`CellIsa::read`]s.
///
/// # Safety
/// As [`CellIsa::read2`].
#[inline(always)]
pub(crate) unsafe fn read_each<I: CellIsa, S: Shape, const C: u32>(
    at: Block,
    b: [usize; 2],
    h: [u64; 2],
) -> [u32; 2] {
    // SAFETY: blocks `b[k]` exist and are readable (caller); the CPU supports I.
    unsafe {
        [
            I::read::<S, C>(Block::nth::<S, C>(at, b[0]), h[0]),
            I::read::<S, C>(Block::nth::<S, C>(at, b[1]), h[1]),
        ]
    }
}

/// An ISA with nothing to compute ahead and the scalar lanes.
macro_rules! scalar_cells {
    ($isa:ty) => {
        impl CellIsa for $isa {
            type Ahead = ();

            #[inline(always)]
            unsafe fn ahead<S: Shape, const C: u32>(_: u64) {}
        }
    };
}

scalar_cells!(crate::portable::Portable);
#[cfg(target_arch = "x86_64")]
scalar_cells!(crate::arch::x86_64::sse2::Sse2);
